"""Shared fixtures: the conformance corpus, the upstream fixtures and the sample tree."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from dra_metadata.testing import DeviceBuilder, MetadataTree
from tests.exploration import load_profile

# Before any test module builds its settings: they inherit the profile's (tests/exploration.py).
HYPOTHESIS_PROFILE = load_profile()

REPO = Path(__file__).resolve().parents[1]
SAMPLE_ROOT = REPO / "examples" / "dra-device-attributes"
#: The Go reference's answers: the conformance corpus and the upstream fixtures.
DATA = Path(__file__).resolve().parent / "data"
#: ``env=`` of :func:`run_cli` for the answer of a shell where ``$DRA_METADATA_ROOT`` is unset.
NO_ROOT: Mapping[str, str | None] = {"DRA_METADATA_ROOT": None}


def load_corpus() -> list[dict[str, Any]]:
    """Every conformance case of ``tests/data/conformance/corpus.jsonl``."""
    with open(DATA / "conformance" / "corpus.jsonl", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


CORPUS = load_corpus()
DECODE_CASES = [case for case in CORPUS if case["kind"] == "decode"]
#: Decode cases that produced an object (valid or not): the validation corpus.
VALIDATED_CASES = [case for case in DECODE_CASES if case["expect"]["object"] is not None]
MERGE_CASES = [case for case in CORPUS if case["kind"] == "merge"]


def case_input(case: dict[str, Any]) -> bytes:
    """The raw stream of a decode case."""
    return base64.b64decode(case["input_b64"])


def case_files(case: dict[str, Any]) -> dict[str, bytes]:
    """File name -> bytes of a merge case."""
    return {name: base64.b64decode(data) for name, data in case["files_b64"].items()}


def wire(obj: dict[str, Any]) -> dict[str, Any]:
    """A corpus object without kind/apiVersion: the wire body ``to_dict()`` gives."""
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


def portable_prefix(message: str) -> str:
    """The part of a Go error text that does not depend on Go's library wording."""
    for fixed in ("no metadata objects found in stream", "no compatible metadata version found"):
        if message.startswith(fixed):
            return message
    for prefix in ("read metadata object from stream: ", "decode metadata object: "):
        if message.startswith(prefix):
            return prefix
    match = re.match(r"(decode [^ :]+: |convert [^:]+: )", message)
    assert match, f"unexpected Go error shape: {message!r}"
    return match.group(1)


def valid_wire_object() -> dict[str, Any]:
    """The upstream validation tests' valid object, plus network data."""
    return {
        "kind": "DeviceMetadata",
        "apiVersion": "metadata.resource.k8s.io/v1beta1",
        "metadata": {"name": "claim", "namespace": "default", "generation": 1},
        "podClaimName": "claim",
        "requests": [
            {
                "name": "request/subrequest",
                "devices": [
                    {
                        "driver": "gpu.example.com",
                        "pool": "worker-0",
                        "name": "gpu-0",
                        "attributes": {"model": {"string": "LATEST-GPU-MODEL"}},
                        "networkData": {"interfaceName": "eth0", "ips": ["192.0.2.5/24"]},
                    }
                ],
            }
        ],
    }


def needs_corpus(cases: list[dict[str, Any]]) -> pytest.MarkDecorator:
    """Parametrize over corpus ``cases`` by id."""
    assert cases, "no such case in tests/data/conformance/corpus.jsonl"
    return pytest.mark.parametrize("case", cases, ids=[case["id"] for case in cases])


@pytest.fixture
def upstream_fixtures() -> dict[str, bytes]:
    """The upstream round-trip fixtures, byte-exact, by directory name."""
    base = DATA / "upstream"
    return {entry.name: (entry / "metadata.json").read_bytes() for entry in sorted(base.iterdir())}


@pytest.fixture
def sample_root() -> Path:
    """The committed sample tree in ``examples/``."""
    return SAMPLE_ROOT


def nic_tree(tree: MetadataTree, *drivers: str) -> list[DeviceBuilder]:
    """Claim nic, request eth, one device per driver (no network data yet); written."""
    request = tree.claim("nic").request("eth")
    devices = [request.device(driver, "node-a", f"vf-{i}") for i, driver in enumerate(drivers)]
    tree.write()
    return devices


_PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_kib(*args: str, timeout: float = 120) -> int:
    """Peak RSS (KiB) of one fresh ``python -m dra_metadata ARGS`` process, output discarded."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "dra_metadata", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=timeout,
    )
    return int(done.stdout)


def cli_environ(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """``os.environ`` as it is now, the checkout first on ``PYTHONPATH``, then ``env`` over it.

    A ``None`` value in ``env`` leaves that variable unset in the child.
    """
    path = os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))
    merged = {**os.environ, "PYTHONPATH": path, **(env or {})}
    return {name: value for name, value in merged.items() if value is not None}


def run_cli(
    *args: str,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 60,
    input: str | None = None,  # noqa: A002 - subprocess.run's name
    cwd: Path = REPO,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m dra_metadata ARGS`` from the checkout, text in and out.

    The environment is :func:`cli_environ` of ``env``: this process's (a variable a fixture
    set reaches the child), the checkout's package imported whatever copy is installed.
    """
    return subprocess.run(
        [sys.executable, "-m", "dra_metadata", *args],
        input=input,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_environ(env),
        timeout=timeout,
        check=check,
    )


def run_cli_bytes(
    *args: str,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 60,
    input: bytes | None = None,  # noqa: A002 - subprocess.run's name
    cwd: Path = REPO,
    check: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run_cli` with bytes in and out: for output that need not be UTF-8."""
    return subprocess.run(
        [sys.executable, "-m", "dra_metadata", *args],
        input=input,
        capture_output=True,
        cwd=cwd,
        env=cli_environ(env),
        timeout=timeout,
        check=check,
    )
