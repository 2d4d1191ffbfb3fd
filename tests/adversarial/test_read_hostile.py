"""Hostile files for the read API and the one-shot commands ``show``, ``validate``, ``lint``.

Real files, real FIFOs and device nodes, real symbolic links, the real command
line in a subprocess: deep nesting as deep as Go allows, links and special files
below the root, wrong argument types.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO

DRIVER = "x.io"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m dra_metadata ARGS`` from the checkout."""
    return subprocess.run(
        [sys.executable, "-m", "dra_metadata", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def metadata(fields_v1: str | None = None) -> dm.DeviceMetadata:
    """A claim ``c`` with request ``r`` and one device, with a managed-fields entry if asked."""
    managed = ()
    if fields_v1 is not None:
        managed = (
            dm.ManagedFieldsEntry(
                manager="m",
                operation="Apply",
                api_version="v1",
                fields_type="FieldsV1",
                fields_v1="{}",
            ),
        )
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(
            name="c", namespace="n", uid="u", generation=1, managed_fields=managed
        ),
        requests=(dm.DeviceMetadataRequest("r", (dm.Device(DRIVER, "p", "d"),)),),
    )


def write_claim(root: Path, data: bytes, claim: str = "c", request: str = "r") -> Path:
    """``data`` as the x.io file of ``claim``/``request`` under ``root``; its path."""
    directory = root / "resourceclaims" / claim / request
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{DRIVER}-metadata.json"
    path.write_bytes(data)
    return path


def deep_fields(depth: int) -> bytes:
    """A compact ``fieldsV1`` value nested ``depth`` objects deep."""
    return b'{"f:a":' * depth + b"{}" + b"}" * depth


def deep_file(root: Path, depth: int) -> Path:
    """A Go-written file whose ``fieldsV1`` is nested ``depth`` levels (compact, as Go keeps it)."""
    data = dm.encode(metadata("{}")).replace(
        b'"fieldsV1": {}', b'"fieldsV1": ' + deep_fields(depth)
    )
    return write_claim(root, data)


def fields_depth(value: object) -> int:
    """How many ``f:a`` levels a parsed ``fieldsV1`` has."""
    depth = 0
    while isinstance(value, dict) and value:
        value = value["f:a"]
        depth += 1
    return depth


# --- A: deep fieldsV1 -------------------------------------------------------------------


@pytest.mark.parametrize("depth", [990, 3000, 9994])
def test_show_driver_writes_fields_v1_as_deep_as_go_accepts(tmp_path: Path, depth: int) -> None:
    """``show --driver`` prints a fieldsV1 nested up to Go's limit, complete and parseable."""
    deep_file(tmp_path, depth)
    done = run("--root", str(tmp_path), "show", "--claim", "c", "--driver", DRIVER)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 1000)
    try:
        shown = json.loads(done.stdout)
    finally:
        sys.setrecursionlimit(limit)
    assert fields_depth(shown["metadata"]["managedFields"][0]["fieldsV1"]) == depth
    assert shown["requests"] == [
        {"name": "r", "devices": [{"driver": DRIVER, "pool": "p", "name": "d"}]}
    ]


def test_show_driver_output_for_shallow_fields_v1_is_unchanged(tmp_path: Path) -> None:
    """For a fieldsV1 Python can hold, the text is exactly ``json.dumps(to_dict(), indent=2)``."""
    raw = '{"f:a":{"k:{\\"x\\":1}":{}},"f:b":[1,2.5,"<é>",true,null],"f:a":{"f:c":{}}}'
    data = dm.encode(metadata("{}")).replace(b'"fieldsV1": {}', b'"fieldsV1": ' + raw.encode())
    write_claim(tmp_path, data)
    done = run("--root", str(tmp_path), "show", "--claim", "c", "--driver", DRIVER)
    assert done.returncode == 0, done.stderr
    md = dm.read_resource_claim("c", "r", driver=DRIVER, root=tmp_path)
    assert done.stdout == json.dumps(md.to_dict(), indent=2, ensure_ascii=False) + "\n"


def test_deep_fields_v1_over_go_limit_is_one_line_exit_65(tmp_path: Path) -> None:
    """A fieldsV1 past Go's 10000 levels is Go's one-line depth error and exit 65 everywhere."""
    path = deep_file(tmp_path, 9996)
    for args in (
        ("show", "--claim", "c", "--driver", DRIVER),
        ("show", "--claim", "c"),
        ("validate", str(path)),
        ("lint", str(path)),
    ):
        done = run("--root", str(tmp_path), *args)
        assert done.returncode == 65, (args, done.stderr)
        assert done.stderr.count("\n") == 1, args
        assert "exceeded max depth" in done.stderr, args
        assert done.stdout == ""


def test_deep_fields_v1_validate_lint_and_merged_show_succeed(tmp_path: Path) -> None:
    """validate, lint and show without --driver read a 9994-level fieldsV1 without a traceback."""
    path = deep_file(tmp_path, 9994)
    for args in (("show", "--claim", "c"), ("validate", str(path)), ("lint", str(path))):
        done = run("--root", str(tmp_path), *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_read_api_on_deep_fields_v1_raises_no_recursion_error(tmp_path: Path) -> None:
    """The readers return the raw fieldsV1 text; to_dict() says it is too deep as a DecodeError."""
    path = deep_file(tmp_path, 9994)
    for md in (
        dm.read_file(path),
        dm.read_resource_claim("c", "r", driver=DRIVER, root=tmp_path),
        dm.decode(path.read_bytes()),
    ):
        assert md.metadata.managed_fields[0].fields_v1 == deep_fields(9994).decode()
        with pytest.raises(dm.DecodeError, match="nested too deeply"):
            md.to_dict()
    assert dm.read_resource_claim("c", "r", root=tmp_path).to_dict()["requests"][0]["name"] == "r"
