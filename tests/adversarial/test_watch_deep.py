"""Hostile nodes for the watch side: ``fieldsV1`` nested as deep as Go allows, and deeper.

Go's decoder accepts 10,000 levels of nesting in one value; Python objects hold
far fewer. A file Go accepts must be delivered, its ``fieldsV1`` written on the
``watch`` line from the raw wire text; a file Go refuses is one ``error`` event
for that file; nothing ends the watch and no ``RecursionError`` escapes, up to
the 16 MiB size cap. The CLI runs in a real subprocess.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata._goscan import read_value
from tests.conftest import run_cli_bytes

HEAD = b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",'
#: The deepest nesting Go's decoder accepts in one value.
GO_MAX_DEPTH = 10000


def fields(depth: int) -> bytes:
    """A compact ``fieldsV1`` value nested ``depth`` objects deep."""
    return b'{"f:a":' * depth + b"{}" + b"}" * depth


def deep_file(depth: int, *, uid: str = "u") -> bytes:
    """A v1beta1 object whose one managed-fields entry carries ``fields(depth)``."""
    return (
        HEAD
        + b'"metadata":{"name":"c","uid":"'
        + uid.encode()
        + b'","generation":1,"managedFields":[{"manager":"m","fieldsV1":'
        + fields(depth)
        + b"}]}}\n"
    )


def request(root: Path) -> Path:
    directory = root / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


#: Depths Go accepts (a file's own levels come on top of fieldsV1's, so 9990 is near the cap).
ACCEPTED = (990, 2500, 9990)
#: Past Go's cap: the file does not decode.
REFUSED = 10005


def watch_cli(root: Path, timeout: str) -> subprocess.CompletedProcess[bytes]:
    """``dra-metadata watch`` of request ``c``/``r`` under ``root``, run to its end."""
    return run_cli_bytes(
        "watch", "--claim=c", "--request=r", f"--root={root}", f"--timeout={timeout}", timeout=120
    )


def populate(root: Path) -> Path:
    """One file per accepted depth, one past Go's cap, and a plain one: a request of five."""
    directory = request(root)
    for index, depth in enumerate(ACCEPTED):
        (directory / f"a{index}-metadata.json").write_bytes(deep_file(depth, uid=f"u{index}"))
    (directory / "b-metadata.json").write_bytes(deep_file(REFUSED))
    plain = dm.DeviceMetadata(metadata=dm.ObjectMeta(name="c", uid="p", generation=3))
    (directory / "c-metadata.json").write_bytes(dm.encode(plain))
    return directory


def test_cli_watch_delivers_what_go_accepts_and_reports_the_rest(tmp_path: Path) -> None:
    """``watch`` prints each accepted deep file with its raw fieldsV1, one error line, exit 0."""
    populate(tmp_path)
    done = watch_cli(tmp_path, "3")
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"Traceback" not in done.stderr, done.stderr
    assert b"Recursion" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    by_driver: dict[str, bytes] = {}
    for line in lines:
        node, end = read_value(line, 0)  # valid JSON, read without recursion
        assert (node.kind, end) == ("{", len(line))
        head = json.loads(line[: line.index(b',"metadata":')] + b"}")
        by_driver[head["driver"]] = line
        if head["driver"].startswith("a"):
            assert head["event"] == "update"
            depth = ACCEPTED[int(head["driver"][1:])]
            assert b'"fieldsV1":' + fields(depth) + b"}]" in line
    assert sorted(by_driver) == ["a0", "a1", "a2", "b", "c"]
    assert json.loads(by_driver["b"])["event"] == "error"
    assert json.loads(by_driver["c"])["generation"] == 3


def test_no_recursion_error_from_watch_awatch_or_wait_for(tmp_path: Path) -> None:
    """The library delivers the deep files Go accepts, errors the rest, raises nothing."""
    directory = populate(tmp_path)
    # As deep as the size cap allows: 16 MiB of "[" is one error, quickly.
    (directory / "d-metadata.json").write_bytes(b"[" * (dm.DEFAULT_MAX_SIZE - 1))
    root = str(tmp_path)
    events = list(dm.watch(claim="c", request="r", root=root, error_timeout=0.2, timeout=1.5))
    kinds = {event.driver: event.kind.value for event in events}
    assert kinds == {"a0": "update", "a1": "update", "a2": "update", "b": "error"} | {
        "c": "update",
        "d": "error",
    }
    for event in events:
        if event.kind == dm.WatchEventKind.UPDATE and event.driver.startswith("a"):
            [entry] = event.metadata.metadata.managed_fields  # type: ignore[union-attr]
            assert entry.fields_v1 == fields(ACCEPTED[int(event.driver[1:])]).decode()

    async def twin() -> list[dm.WatchEvent]:
        twin = dm.awatch(claim="c", request="r", root=root, error_timeout=0.2, timeout=1.5)
        return [event async for event in twin]

    assert {e.driver: e.kind.value for e in asyncio.run(twin())} == kinds
    merged = dm.wait_for(claim="c", request="r", driver="a2", root=root, timeout=10)
    assert merged.sources[0].claim_uid == "u2"


@pytest.mark.adversarial_long
def test_every_depth_around_the_limits(tmp_path: Path) -> None:
    """Every depth from 900 to 1100 and 9980 to 10010: delivered or an error, never a crash."""
    directory = request(tmp_path)
    path = directory / "x-metadata.json"
    for depth in [*range(900, 1101), *range(9980, 10011)]:
        path.write_bytes(deep_file(depth))
        done = watch_cli(tmp_path, "0")
        assert done.returncode == 0, (depth, done.stderr)
        assert b"Traceback" not in done.stderr, depth
        if depth + 5 <= GO_MAX_DEPTH:  # the file adds four levels, the innermost {} one
            assert b'"fieldsV1":' + fields(depth) in done.stdout, depth
