"""``dra-metadata show``: one request's metadata, merged across drivers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from .._model import DeviceMetadata, MergedDeviceMetadata

if TYPE_CHECKING:
    from collections.abc import Iterator
import json

import msgspec

from .._model import ObjectMeta
from . import (
    EXIT_OK,
    Commands,
    add_command,
    add_format,
    add_selection,
    fail,
    write_stdout,
    write_text,
)

__all__ = ["register", "summary", "with_identity"]

_DESCRIPTION: Final = """\
Print the metadata of one request (every request of the claim without
--request) as one JSON document, merged across its drivers' files.

--format json (the default) is the wire form with the claim's identity filled
in: "metadata" holds the name, namespace and uid the files agree on (and the
generation when every file has the same), and "generations" each driver's
generation. When the files disagree on the claim, "metadata" is empty and
"disagreement" says on what (also said on stderr). --format go prints Go's
merged object exactly ("metadata": {}, as the Go reference returns it).
With --driver, that driver's file alone, as written. --format summary prints
one block per device.
"""


def register(commands: Commands) -> None:
    """Add ``show`` to ``commands``."""
    parser = add_command(
        commands,
        "show",
        summary="print the metadata of one request, merged across drivers",
        description=_DESCRIPTION,
    )
    add_selection(parser, required=True, request_required=False)
    add_format(
        parser,
        ("json", "go", "summary"),
        help="json: the wire form with the claim's identity and each driver's generation "
        "(default); go: Go's merged object exactly; summary: one block per device",
    )
    parser.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    # loaded when the command runs: --help and completion build every parser without it
    from .._claims import read_resource_claim, read_resource_claim_template

    if args.claim is not None:
        md = read_resource_claim(args.claim, args.request, driver=args.driver, root=args.root)
    else:
        md = read_resource_claim_template(
            args.template_claim, args.request, driver=args.driver, root=args.root
        )
    if isinstance(md, MergedDeviceMetadata):
        disagreement = md.disagreement()
        if disagreement is not None:
            fail(f"warning: {disagreement}")
    if args.format in ("json", "go"):
        # imported here, not at the top: the other commands start faster without it
        from .._encode import wire_json

        if args.format == "json" and isinstance(md, MergedDeviceMetadata):
            for piece in with_identity(md):
                write_stdout(piece)
        else:
            for piece in wire_json(md):
                write_stdout(piece)
        write_stdout(b"\n")
    else:
        write_text(summary(md))
    return EXIT_OK


def with_identity(md: MergedDeviceMetadata) -> Iterator[bytes]:
    """The JSON text ``show`` prints for merged files: the wire form, the claim's identity in it.

    ``metadata`` holds the name, namespace and uid the files agree on, and the
    generation when they all have the same; ``generations`` follows with each
    driver's. When the files disagree on the claim, ``metadata`` is empty and
    ``disagreement`` says on what.
    """

    # loaded when the command runs: --help and completion build every parser without it
    from .._encode import wire_json

    disagreement = md.disagreement()
    extra: dict[str, object] = {"generations": md.generations}
    if disagreement is None and md.sources:
        generations = set(md.generations.values())
        meta = ObjectMeta(
            name=md.claim_name or "",
            namespace=md.claim_namespace or "",
            uid=md.claim_uid or "",
            generation=generations.pop() if len(generations) == 1 else 0,
        )
        md = msgspec.structs.replace(md, metadata=meta)
    elif disagreement is not None:
        extra["disagreement"] = disagreement
    pieces = list(wire_json(md))
    # The text ends with the object's closing brace: the extra keys go in before it.
    last = pieces[-1]
    assert last.endswith(b"\n}")
    # Driver names come from file names: bytes that are not UTF-8 stay as they were.
    text = json.dumps(extra, indent=2, ensure_ascii=False).encode("utf-8", "surrogateescape")
    inner = text[1:-2]  # the extra object's members, indented, between its braces
    pieces[-1] = last[:-2] + b"," + inner + b"\n}"
    return iter(pieces)


def summary(md: DeviceMetadata) -> str:
    """A readable, line-oriented summary of ``md``."""
    lines: list[str] = []
    if md.pod_claim_name is not None:
        lines.append(f"pod claim: {md.pod_claim_name}")
    meta = md.metadata
    if isinstance(md, MergedDeviceMetadata):
        disagreement = md.disagreement()
        if disagreement is not None:
            lines.append(f"claim: (unknown: {disagreement})")
        elif md.sources:
            generations = ", ".join(f"{driver}={n}" for driver, n in md.generations.items())
            lines.append(
                f"claim: {md.claim_namespace}/{md.claim_name} uid={md.claim_uid} "
                f"generation: {generations}"
            )
        for source in md.sources:
            lines.append(
                f"file: {source.path} (claim {source.claim_namespace}/{source.claim_name}, "
                f"uid={source.claim_uid}, generation={source.generation}, {source.api_version})"
            )
    elif meta.name or meta.uid:
        lines.append(
            f"claim: {meta.namespace}/{meta.name} uid={meta.uid} generation={meta.generation}"
        )
    for request in md.requests:
        lines.append(f"request {request.name}: {len(request.devices)} device(s)")
        for device in request.devices:
            lines.append(f"  {device.driver} {device.pool}/{device.name}")
            for key in sorted(device.attributes):
                value = device.attributes[key].value
                lines.append(f"    {key} = {_show_value(value)}")
            net = device.network_data
            if net is not None:
                for wire, field in net.set_fields():
                    text = ", ".join(field) if isinstance(field, tuple) else field
                    lines.append(f"    {wire} = {text}")
    return "\n".join(lines) + "\n"


def _show_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(_show_value(v) for v in value) + "]"
    if value is None:
        return "(no value)"
    return str(value)
