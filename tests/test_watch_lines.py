"""The lines ``dra-metadata watch`` prints are JSON whatever the node named its files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dra_metadata as dm
from dra_metadata._cli import json_text
from tests.conftest import run_cli_bytes


def object_bytes(generation: int) -> bytes:
    """A small stream of generation ``generation``."""
    return dm.encode(dm.DeviceMetadata(metadata=dm.ObjectMeta(uid="u", generation=generation)))


def test_names_with_control_characters_and_bad_bytes_stay_json(tmp_path: Path) -> None:
    """A claim named with a newline and ESC, a driver file of non-UTF-8 bytes: valid JSON lines."""
    claim = "c\n\x1b]0;owned\x07"
    directory = os.path.join(os.fsencode(tmp_path), b"resourceclaims", os.fsencode(claim), b"r")
    os.makedirs(directory)
    for name in (b"\xff\x1b-metadata.json", b"ok-metadata.json"):
        with open(os.path.join(directory, name), "wb") as file:
            file.write(object_bytes(1))
    done = run_cli_bytes(
        "watch", f"--root={tmp_path}", "--claim", claim, "--request=r", "--timeout=0"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    records = [json.loads(line.decode("utf-8")) for line in lines]  # strict UTF-8, strict JSON
    drivers = {record["driver"] for record in records}
    assert drivers == {json_text("\udcff\x1b"), "ok"} == {"\\xff\\x1b", "ok"}
    path = os.fsdecode(os.path.join(directory, b"ok-metadata.json"))
    assert json_text(path) in {record["path"] for record in records}
    assert all("\n" not in record["path"] for record in records)
