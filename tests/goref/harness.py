"""The Go reference harness (``conformance/goref``): build it, cache it, talk to it.

The same Go sources build against two releases, each a module file of its own:
``go.mod`` pins the release the suite checks (the default), ``go.next.mod`` (with its
``go.next.sum`` and the Go toolchain it needs on its ``toolchain`` line) the next
release, watched. ``DRA_METADATA_GOREF_NEXT=1`` selects the next one (:func:`release`).

``build()`` compiles the harness once per release and source hash: the binary lives in
``<cache>/<module version>/<sha256 of the module files, *.go, the go version,
GOEXPERIMENT>/goref[-static]`` (cache: ``$DRA_METADATA_GOREF_CACHE``, else
``~/.cache/dra-metadata/goref``), so a test run pays the build only when the harness
or Go changed. ``static=True`` builds with ``CGO_ENABLED=0``: one binary that runs in
any Linux container (issue 21's in-container check uses it).

From a shell: ``scripts/build-goref [--static] [--next]`` prints the path of the binary.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[2]
#: The harness's sources: its own Go module.
SOURCE = REPO / "conformance" / "goref"
#: Where built binaries are kept, by source hash (overridden by the variable).
CACHE_ENV = "DRA_METADATA_GOREF_CACHE"
#: The Kubernetes module whose answers are the reference (go.mod pins it).
MODULE = "k8s.io/dynamic-resource-allocation"
#: Set to 1 to build against the next release (``go.next.mod``) instead of go.mod's.
NEXT_ENV = "DRA_METADATA_GOREF_NEXT"
#: GOEXPERIMENT for the harness build: ``jsonv2`` by default, the JSON implementation
#: whose error wording the library follows (docs/differences.md); set it empty to ask
#: a default Go build, whose JSON errors are worded differently after their prefix.
EXPERIMENT_ENV = "DRA_METADATA_GOREF_GOEXPERIMENT"


def experiment() -> str:
    """The GOEXPERIMENT the harness is built with."""
    return os.environ.get(EXPERIMENT_ENV, "jsonv2")


class GorefUnavailable(Exception):
    """The harness cannot be built here (no go, or the build failed); the message says why."""


@dataclass(frozen=True)
class Release:
    """One module file the harness builds against: the release it pins, the Go it needs."""

    #: ``go.mod`` or ``go.next.mod``, in :data:`SOURCE`.
    modfile: str

    def _directives(self) -> dict[str, str]:
        found = {}
        for line in (SOURCE / self.modfile).read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in (MODULE, "toolchain"):
                found[words[0]] = words[1]
        return found

    @property
    def sumfile(self) -> str:
        """Its checksums, named as ``go -modfile`` expects them."""
        return self.modfile.removesuffix(".mod") + ".sum"

    @property
    def version(self) -> str:
        """The version of :data:`MODULE` it pins."""
        return self._directives()[MODULE]

    @property
    def toolchain(self) -> str | None:
        """The Go toolchain it asks for (GOTOOLCHAIN), or None for the ``go`` on PATH."""
        return self._directives().get("toolchain")

    def env(self) -> dict[str, str]:
        """The environment of go commands for this release."""
        return {**os.environ, "GOTOOLCHAIN": self.toolchain} if self.toolchain else {**os.environ}

    def flags(self) -> list[str]:
        """The go command's flags that select this module file."""
        return [] if self.modfile == "go.mod" else [f"-modfile={self.modfile}"]


#: The release the suite checks by default, and the next one (``go.next.mod``).
CURRENT, NEXT = Release("go.mod"), Release("go.next.mod")


def release() -> Release:
    """The release this run checks: :data:`NEXT` when ``DRA_METADATA_GOREF_NEXT=1``."""
    return NEXT if os.environ.get(NEXT_ENV) == "1" else CURRENT


def go_version(go: str, env: dict[str, str] | None = None) -> str:
    """``go version``'s output (part of the cache key); the toolchain ``env`` asks for."""
    return subprocess.run(
        [go, "version"], capture_output=True, text=True, check=True, timeout=600, env=env
    ).stdout.strip()


def source_hash(go: str, rel: Release = CURRENT) -> str:
    """sha256 of the module files, every *.go file (names and bytes), go version, GOEXPERIMENT."""
    digest = hashlib.sha256()
    files = [SOURCE / rel.modfile, SOURCE / rel.sumfile, *SOURCE.glob("*.go")]
    for path in sorted(files):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    try:
        version = go_version(go, rel.env())
    except subprocess.CalledProcessError as err:
        why = err.stderr.strip()[-1000:]
        if rel.toolchain is None:
            raise GorefUnavailable(f"go version failed: {why}") from err
        raise GorefUnavailable(
            f"{rel.modfile} ({MODULE} {rel.version}) needs Go {rel.toolchain}, which could "
            f"not be fetched (GOTOOLCHAIN={rel.toolchain}): {why}"
        ) from err
    digest.update(version.encode() + b"\0" + experiment().encode())
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where built harness binaries are kept."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dra-metadata" / "goref"


def build(*, static: bool = False, rel: Release | None = None) -> Path:
    """The harness binary for the current sources, built if not cached; its path.

    ``rel``: the release to build against (default: :func:`release`). Raises
    :class:`GorefUnavailable` when ``go`` or the release's toolchain is missing or the
    build fails.
    """
    rel = release() if rel is None else rel
    go = shutil.which("go")
    if go is None:
        raise GorefUnavailable(
            "the Go reference harness needs go (https://go.dev/dl/) on PATH; "
            "then: python -m pytest -m goref"
        )
    name = "goref-static" if static else "goref"
    target = cache_dir() / rel.version / source_hash(go, rel) / name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    env = {**rel.env(), "GOEXPERIMENT": experiment()}
    if static:
        env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "-mod=readonly")
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        done = subprocess.run(
            [go, "build", *rel.flags(), "-trimpath", "-o", str(out), "."],
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
                f"building {SOURCE} with {rel.modfile} failed (go mod download there first?):"
                f"\n{done.stderr[-3000:]}"
            )
        os.replace(out, target)  # atomic: concurrent runs build the same bytes
    return target


class Rewrite(Protocol):
    """Turns an answer to ``op`` into another release's form (tests/goref/next_release.py)."""

    def __call__(self, op: str, answer: dict[str, Any], /) -> dict[str, Any]: ...


class Goref:
    """One running harness process; :meth:`ask` sends a request and returns its answer.

    ``rewrite``, when set, is applied to every answer (the next release's run sets it).
    """

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.rewrite: Rewrite | None = None
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
        return answer if self.rewrite is None else self.rewrite(request["op"], answer)

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
    """``python -m tests.goref.harness build [--static] [--next]``: build, print the path."""
    if not argv or argv[0] != "build" or any(a not in ("--static", "--next") for a in argv[1:]):
        print("usage: python -m tests.goref.harness build [--static] [--next]", file=sys.stderr)
        return 2
    try:
        rel = NEXT if "--next" in argv[1:] else None
        print(build(static="--static" in argv[1:], rel=rel))
    except GorefUnavailable as err:
        print(f"build-goref: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
