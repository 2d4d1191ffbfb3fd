"""The Go reference harness (``conformance/goref``): build it, cache it, talk to it.

``build()`` compiles the harness once per source hash: the binary lives in
``<cache>/<sha256 of go.mod, go.sum, *.go, the go version, GOEXPERIMENT>/goref[-static]``
(cache: ``$DRA_METADATA_GOREF_CACHE``, else ``~/.cache/dra-metadata/goref``), so a
test run pays the build only when the harness or Go changed. ``static=True`` builds
with ``CGO_ENABLED=0``: one binary that runs in any Linux container (issue 21's
in-container check uses it).

From a shell: ``scripts/build-goref [--static]`` prints the path of the binary.

:class:`Goref` is one running harness: one JSON request a line in, one answer a line
out (the protocol is in ``conformance/goref/main.go``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: The harness's sources: its own Go module.
SOURCE = REPO / "conformance" / "goref"
#: Where built binaries are kept, by source hash (overridden by the variable).
CACHE_ENV = "DRA_METADATA_GOREF_CACHE"
#: The Kubernetes module whose answers are the reference (go.mod pins it).
MODULE = "k8s.io/dynamic-resource-allocation"
#: GOEXPERIMENT for the harness build: ``jsonv2`` by default, the JSON implementation
#: whose error wording the library follows (docs/differences.md); set it empty to ask
#: a default Go build, whose JSON errors are worded differently after their prefix.
EXPERIMENT_ENV = "DRA_METADATA_GOREF_GOEXPERIMENT"


def experiment() -> str:
    """The GOEXPERIMENT the harness is built with."""
    return os.environ.get(EXPERIMENT_ENV, "jsonv2")


class GorefUnavailable(Exception):
    """The harness cannot be built here (no go, or the build failed); the message says why."""


def go_version(go: str) -> str:
    """``go version``'s output (part of the cache key)."""
    return subprocess.run(
        [go, "version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def source_hash(go: str) -> str:
    """sha256 of go.mod, go.sum, every *.go file (names and bytes), go version, GOEXPERIMENT."""
    digest = hashlib.sha256()
    for path in sorted([SOURCE / "go.mod", SOURCE / "go.sum", *SOURCE.glob("*.go")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(go_version(go).encode() + b"\0" + experiment().encode())
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where built harness binaries are kept."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dra-metadata" / "goref"


def build(*, static: bool = False) -> Path:
    """The harness binary for the current sources, built if not cached; its path.

    Raises :class:`GorefUnavailable` when ``go`` is missing or the build fails.
    """
    go = shutil.which("go")
    if go is None:
        raise GorefUnavailable(
            "the Go reference harness needs go (https://go.dev/dl/) on PATH; "
            "then: python -m pytest -m goref"
        )
    target = cache_dir() / source_hash(go) / ("goref-static" if static else "goref")
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOEXPERIMENT": experiment()}
    if static:
        env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "-mod=readonly")
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        done = subprocess.run(
            [go, "build", "-trimpath", "-o", str(out), "."],
            cwd=SOURCE,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=1200,
            check=False,
        )
        if done.returncode != 0:
            raise GorefUnavailable(
                f"building {SOURCE} failed (go mod download there first?):\n{done.stderr[-3000:]}"
            )
        os.replace(out, target)  # atomic: concurrent runs build the same bytes
    return target


class Goref:
    """One running harness process; :meth:`ask` sends a request and returns its answer."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.proc = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
            encoding="utf-8",
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request; the answer (``harnessError`` answers raise AssertionError)."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the harness ended (exit {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "harnessError" in answer:
            raise AssertionError(f"harness: {answer['harnessError']}")
        return answer

    def decode(self, data: bytes) -> dict[str, Any]:
        """Go's answer for one stream (the corpus' ``expect`` shape)."""
        return self.ask({"op": "decode", "input_b64": base64.b64encode(data).decode()})

    def versions(self) -> dict[str, str]:
        """The module versions the binary was built with (and ``go``, ``GOEXPERIMENT``)."""
        return self.ask({"op": "version"})

    @functools.cached_property
    def jsonv2(self) -> bool:
        """Whether the binary's encoding/json is the jsonv2 experiment's (the docs' wording)."""
        return "jsonv2" in self.versions().get("GOEXPERIMENT", "").split(",")

    def close(self) -> None:
        """End the process (closing stdin ends its loop)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def main(argv: list[str]) -> int:
    """``python -m tests.goref.harness build [--static]``: build and print the binary's path."""
    if not argv or argv[0] != "build" or any(a != "--static" for a in argv[1:]):
        print("usage: python -m tests.goref.harness build [--static]", file=sys.stderr)
        return 2
    try:
        print(build(static="--static" in argv[1:]))
    except GorefUnavailable as err:
        print(f"build-goref: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
