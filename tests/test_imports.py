"""Fast paths stay fast: no pydantic, watchfiles or semver where they are not needed."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO, SAMPLE_ROOT

HEAVY = ("pydantic", "watchfiles", "semver")


def loaded_after(code: str) -> list[str]:
    """Heavy top-level packages in sys.modules after running ``code`` in a fresh interpreter."""
    probe = (
        code + "\nimport sys, json\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_import_loads_no_heavy_dependency() -> None:
    """import dra_metadata loads neither pydantic nor watchfiles nor semver."""
    assert loaded_after("import dra_metadata") == []


def test_reading_and_decoding_load_no_heavy_dependency() -> None:
    """Reading, decoding, encoding and the show command load none of them either."""
    code = f"""
import contextlib, io
import dra_metadata as dm
from dra_metadata._cli import main
md = dm.read_resource_claim_template("gpu", "gpu", root={str(SAMPLE_ROOT)!r})
dm.decode(dm.encode(md))
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["show", "--root", {str(SAMPLE_ROOT)!r}, "--claim", "nic", "--request", "eth"]) == 0
"""
    assert loaded_after(code) == []


def test_validation_loads_pydantic_on_demand() -> None:
    """validate() is where pydantic gets loaded."""
    assert "pydantic" in loaded_after("import dra_metadata as dm; dm.validate(dm.DeviceMetadata())")
