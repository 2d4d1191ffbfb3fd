"""Generate the driver's gRPC stubs from the kubelet's own ``.proto`` files (v0.37.2).

    python build_stubs.py [--out DIR]

The kubelet defines the two services a DRA driver serves in ``k8s.io/kubelet``:
plugin registration (``pkg/apis/pluginregistration/v1/api.proto``) and the DRA plugin
service (``pkg/apis/dra/v1/api.proto``). This script takes both from that module at
the release the cluster runs, never from a copy: from the Go module cache when Go has
downloaded the module (``go mod download k8s.io/kubelet@v0.37.2``), otherwise from the
module's zip on the Go module proxy (``$GOPROXY``, default proxy.golang.org), which
needs no Go. Each file is checked against its sha256 below before ``grpc_tools.protoc``
(``pip install grpcio-tools``) turns it into Python:

    DIR/kubelet/pluginregistration/v1/api_pb2.py, api_pb2_grpc.py
    DIR/kubelet/dra/v1/api_pb2.py, api_pb2_grpc.py

``DIR`` defaults to ``_stubs`` next to this file; ``driver.py --stubs DIR`` reads them.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

MODULE = "k8s.io/kubelet"
VERSION = "v0.37.2"
#: path in the module -> (where it goes below the stubs directory, its sha256)
PROTOS = {
    "pkg/apis/pluginregistration/v1/api.proto": (
        "kubelet/pluginregistration/v1/api.proto",
        "7a67a0000a1a167c155286834bc9ccb489f8bcdb394e006daba270189c272afa",
    ),
    "pkg/apis/dra/v1/api.proto": (
        "kubelet/dra/v1/api.proto",
        "b3066ad7f6abcfd0003c47b06ceb801d76997d78d6be505597478d3905b9cc57",
    ),
}
DEFAULT_OUT = Path(__file__).resolve().parent / "_stubs"


def from_module_cache() -> dict[str, bytes] | None:
    """The protos from Go's module cache, when the module is there."""
    cache = os.environ.get("GOMODCACHE")
    if not cache and shutil.which("go"):
        found = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False
        )
        cache = found.stdout.strip() if found.returncode == 0 else None
    if not cache:
        return None
    root = Path(cache) / f"{MODULE}@{VERSION}"
    if not all((root / name).is_file() for name in PROTOS):
        return None
    return {name: (root / name).read_bytes() for name in PROTOS}


def from_proxy() -> dict[str, bytes]:
    """The protos from the module's zip on the first HTTP(S) Go module proxy."""
    proxies = os.environ.get("GOPROXY", "https://proxy.golang.org").replace("|", ",")
    proxy = next(
        (p for p in proxies.split(",") if p.startswith(("http://", "https://"))),
        "https://proxy.golang.org",
    )
    url = f"{proxy.rstrip('/')}/{MODULE}/@v/{VERSION}.zip"
    with urllib.request.urlopen(url, timeout=60) as answer:
        archive = zipfile.ZipFile(io.BytesIO(answer.read()))
    return {name: archive.read(f"{MODULE}@{VERSION}/{name}") for name in PROTOS}


def build(out: Path) -> None:
    """Write the stubs into ``out`` (replaced whole, so a failed build leaves none)."""
    from grpc_tools import protoc  # grpcio-tools: needed here only, not by the driver

    protos = from_module_cache()
    source = f"the Go module cache ({MODULE}@{VERSION})"
    if protos is None:
        protos = from_proxy()
        source = f"the Go module proxy ({MODULE}@{VERSION}.zip)"
    for name, data in protos.items():
        digest = hashlib.sha256(data).hexdigest()
        if digest != PROTOS[name][1]:
            raise SystemExit(f"build_stubs: {name} from {source} has sha256 {digest}, "
                             f"not {PROTOS[name][1]}: refusing it")  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as scratch:
        tree, built = Path(scratch) / "protos", Path(scratch) / "stubs"
        built.mkdir()
        for name, data in protos.items():
            target = tree / PROTOS[name][0]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        include = Path(protoc.__file__).parent / "_proto"
        args = [
            "protoc", f"-I{tree}", f"-I{include}",
            f"--python_out={built}", f"--grpc_python_out={built}",
            *(str(tree / target) for target, _ in PROTOS.values()),
        ]  # fmt: skip
        if protoc.main(args) != 0:
            raise SystemExit(f"build_stubs: protoc failed on the protos from {source}")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(built, out)
    print(f"build_stubs: {len(protos)} services from {source} into {out}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the stubs directory")
    build(parser.parse_args().out)


if __name__ == "__main__":
    main()
