"""``dra-metadata watch`` and ``dra-metadata wait``: follow a request, or wait for it.

``watch`` prints one JSON line per event; ``wait`` exits 0 as soon as a
condition holds (an init container's job) and 1 with the reason when it times
out. Both follow the request's files as :func:`dra_metadata.watch` does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from typing import TYPE_CHECKING, Final

from .._duration import DURATION_HELP
from .._duration import parse_duration as parse
from .._paths import request_dir, root_path
from . import (
    EXIT_FALSE,
    EXIT_OK,
    Commands,
    add_command,
    add_selection,
    fail,
    json_text,
    selected_claim,
    write_stdout,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._model import DeviceMetadata
    from .._watch import WatchEvent

__all__ = ["event_line", "parse_duration", "register"]


_WATCH_DESCRIPTION: Final = """\
Follow the metadata files of one request and print one JSON line per event:
{"event": ..., "path": ..., "driver": ..., "generation": ..., "metadata": ...},
plus "message" for stale and error events. Events: update (a complete object
with a new generation; files present at the start come first), stale (the
file was replaced on the node after this container started: later updates
cannot reach it), removed, error (the file stayed undecodable). "metadata" is
that file's object in its wire form (null for removed and error).

Runs until interrupted, or for --timeout.
"""

_WAIT_DESCRIPTION: Final = """\
Wait until the request's metadata (merged across its drivers' files) meets a
condition, then exit 0: by default that it exists (a file that decodes);
--for network: every device has network data; --generation N: every file has
reached generation N; --attribute NAME: every device has the attribute (the
name resolves as in get: pciBusID finds NVIDIA's pcieBusID too). Given together,
all must hold; what already holds returns at once. Files that appear later,
in-place updates and torn writes are handled as `watch` handles them.

With --timeout, exit 1 when it passes, with one line on stderr saying what was
last seen (no file, a file that does not decode, generation 1 without network
data ...). Without it, wait for ever. Every --progress interval a line on stderr
says what is still missing, and for how long.

Inside a container, whose metadata files are bind mounts made when it was
created, it fails at once (exit 69) when the request is not mounted (it can
never appear) or when the node replaced a file after the container started
(stale: the mounted copy can never change). On a plain directory tree it waits
for files to appear.
"""


def register(commands: Commands) -> None:
    """Add ``watch`` and ``wait`` to ``commands``."""
    watch = add_command(
        commands,
        "watch",
        summary="print one JSON line per change of a request's metadata files",
        description=_WATCH_DESCRIPTION,
    )
    add_selection(watch, required=True)
    watch.add_argument(
        "--timeout", type=parse_duration, metavar="DURATION", help=f"stop after {DURATION_HELP}"
    )
    watch.set_defaults(handler=_watch)

    wait = add_command(
        commands,
        "wait",
        summary="wait until a request's metadata exists or meets a condition",
        description=_WAIT_DESCRIPTION,
    )
    add_selection(wait, required=True)
    wait.add_argument(
        "--for",
        dest="condition",
        choices=("exists", "network"),
        default="exists",
        help="exists (default): a file that decodes; network: every device has network data",
    )
    wait.add_argument(
        "--generation", type=_generation, metavar="N", help="every file has reached generation N"
    )
    wait.add_argument(
        "--attribute",
        action="append",
        default=[],
        metavar="NAME",
        help="every device has attribute NAME (repeatable)",
    )
    wait.add_argument(
        "--timeout",
        type=parse_duration,
        metavar="DURATION",
        help=f"give up (exit 1) after {DURATION_HELP}",
    )
    wait.add_argument(
        "--progress",
        type=parse_duration,
        default=10.0,
        metavar="DURATION",
        help="print what is still missing on stderr this often (default 10s; 0: never)",
    )
    wait.set_defaults(handler=_wait)


def parse_duration(text: str) -> float:
    """The argparse type of every duration option: :func:`dra_metadata._duration.parse_duration`.

    >>> [parse_duration(t) for t in ("30s", "500ms", "1m30s", "1.5", "0")]
    [30.0, 0.5, 90.0, 1.5, 0.0]
    """

    try:
        return parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _generation(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid generation {text!r}: expected an integer >= 1")
    return value


def event_line(event: WatchEvent) -> str:
    r"""The JSON line ``watch`` prints for ``event`` (with its newline).

    ``path`` and ``driver`` are escaped as ``ls --json`` escapes names
    (:func:`json_text`: control characters and bytes that are not UTF-8 as
    ``\n``, ``\xNN``, backslashes doubled), so every line is valid JSON whatever
    the node named its directories. Each ``fieldsV1`` is written from its raw
    wire text, never turned into Python objects: Go accepts 10,000 levels of
    nesting, which Python's recursion limit does not.
    """

    record: dict[str, object] = {
        "event": event.kind.value,
        "path": json_text(event.path),
        "driver": json_text(event.driver),
        "generation": event.generation,
        "metadata": None,
    }
    raws: list[str] = []
    # A marker no file can hold: the raw texts go in after encoding the rest.
    mark = f"dra-metadata-raw-{os.urandom(8).hex()}-"
    if event.metadata is not None:
        body = event.metadata.wire_body()
        for entry in body["metadata"].get("managedFields", ()):
            raw = entry.get("fieldsV1")
            if isinstance(raw, str):
                entry["fieldsV1"] = f"{mark}{len(raws)}"
                raws.append(raw)
        record["metadata"] = body
    if event.message:
        record["message"] = event.message
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    if raws:
        text = re.sub(f'"{mark}([0-9]+)"', lambda match: raws[int(match.group(1))], text)
    return text + "\n"


def _watch(args: argparse.Namespace) -> int:
    # loaded when the command runs: --help and completion build every parser without it
    from .._watch import watch
    from .._watch._api import unmounted_selection

    problem = unmounted_selection(
        claim=args.claim,
        pod_claim=args.template_claim,
        request=args.request,
        driver=args.driver,
        root=args.root,
    )
    if problem is not None:
        raise problem  # inside a container: nothing can ever arrive
    # loaded when the command runs: --help and completion build every parser without it
    from .._nearby import subdir_of

    kind, claim = selected_claim(args)
    assert kind is not None, "the parser requires --claim or --template-claim"
    if not os.path.isdir(
        request_dir(subdir_of(kind), claim, args.request, root=root_path(args.root))
    ):
        # A plain tree: it may still appear. Say what is there meanwhile.
        fail(f"note: {_nothing_there(args)}; watching for it to appear")
    events = watch(
        claim=args.claim,
        pod_claim=args.template_claim,
        request=args.request,
        driver=args.driver,
        root=args.root,
        timeout=args.timeout,
    )
    try:
        for event in events:
            # A lone surrogate left in a message becomes a \udcXX escape: still JSON.
            write_stdout(event_line(event).encode("utf-8", "backslashreplace"))
    finally:
        events.close()  # Ctrl-C goes on to main(): "interrupted", exit 130, as wait
    return EXIT_OK


def _wait(args: argparse.Namespace) -> int:

    # loaded when the command runs: --help and completion build every parser without it
    from .._watch import WaitTimeoutError, has_attribute, has_generation, has_network_data, wait_for
    from .._watch._conditions import all_of

    conditions: list[Callable[[DeviceMetadata], bool]] = []
    if args.condition == "network":
        conditions.append(has_network_data)
    if args.generation is not None:
        conditions.append(has_generation(args.generation))
    conditions.extend(has_attribute(name) for name in args.attribute)
    until = all_of(*conditions) if conditions else None
    start = time.monotonic()
    deadline = None if args.timeout is None else start + args.timeout
    interval = args.progress
    while True:
        # Wait in slices of the progress interval, saying after each what is missing.
        now = time.monotonic()
        left = None if deadline is None else max(0.0, deadline - now)
        piece = left if not interval else interval if left is None else min(interval, left)
        try:
            wait_for(
                claim=args.claim,
                pod_claim=args.template_claim,
                request=args.request,
                driver=args.driver,
                root=args.root,
                until=until,
                timeout=piece,
            )
        except WaitTimeoutError as err:
            waited = time.monotonic() - start
            text = str(err)
            if err.last_seen is None:
                text += f" ({_nothing_there(args)})"
            if deadline is not None and time.monotonic() >= deadline:
                # The timeout as given, as wait_for() says it: the time measured here also
                # holds the start and the end of each wait, which a busy machine stretches.
                fail(text.replace(f"after {piece:g}s", f"after {args.timeout:g}s", 1))
                return EXIT_FALSE
            _, _, rest = text.partition(" waiting for ")
            fail(f"still waiting after {waited:.0f}s for {rest}")
            continue
        return EXIT_OK


def _nothing_there(args: argparse.Namespace) -> str:
    """What is nearby when the request is not there at all, and the likely fix."""
    # loaded when the command runs: --help and completion build every parser without it
    from .._nearby import not_found

    kind, claim = selected_claim(args)
    missing = not_found(
        root_path(args.root), kind=kind, claim=claim, request=args.request, driver=args.driver
    )
    return str(missing).partition(": ")[2] or str(missing)
