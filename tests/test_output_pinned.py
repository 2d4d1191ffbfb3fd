"""Every one-shot command prints, byte for byte, what it printed when these outputs were pinned.

The pinned outputs (``tests/data/pinned/outputs.json``: stdout, stderr and exit
code of each command) were taken from the code before the performance work of
the issue "Speed at every size"; a change that alters any byte of any output
fails here. The trees are the two sample trees and one built here with the
shapes the fast paths special-case: many claims, one request served by many
drivers (every attribute qualified), attribute names two drivers share, list
values, devices without attributes, network data, and a file that does not
decode.

After a deliberate change of an output, regenerate with
``python tests/test_output_pinned.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dra_metadata as dm

REPO = Path(__file__).resolve().parent.parent
PINNED = REPO / "tests" / "data" / "pinned" / "outputs.json"
SAMPLE = "examples/dra-device-attributes"
TOPOLOGY = "examples/topology-tree"
BUILT = "{built}"  # replaced by the tree build_tree() writes

COMMANDS: tuple[tuple[str, ...], ...] = tuple(
    tuple(command.split())
    for command in (
        f"ls --root {SAMPLE}",
        f"ls --root {SAMPLE} --json",
        f"env --root {SAMPLE}",
        f"env --root {SAMPLE} --format dotenv",
        f"env --root {SAMPLE} --format json",
        f"env --root {SAMPLE} --prefix X_ --claim train",
        f"env --root {SAMPLE} --template-claim gpu --request gpu",
        f"show --root {SAMPLE} --template-claim gpu --request gpu",
        f"show --root {SAMPLE} --template-claim gpu --request gpu --format go",
        f"show --root {SAMPLE} --claim train --request accel --driver rdma.example.com",
        f"get --root {SAMPLE} --template-claim gpu --request gpu uuid",
        f"get --root {SAMPLE} --claim nic --request eth pciBusID",
        f"get --root {SAMPLE} --claim gpu --request gpu uuid",
        f"validate {SAMPLE}",
        f"lint {SAMPLE}",
        f"ls --root {TOPOLOGY}",
        f"env --root {TOPOLOGY}",
        f"env --root {TOPOLOGY} --profile cuda --profile nccl",
        f"env --root {TOPOLOGY} --profile numa",
        f"topology --root {TOPOLOGY}",
        f"topology --root {TOPOLOGY} --matrix",
        f"topology --root {TOPOLOGY} --json",
        f"ls --root {BUILT}",
        f"ls --root {BUILT} --json",
        f"env --root {BUILT}",
        f"env --root {BUILT} --format dotenv",
        f"env --root {BUILT} --format json",
        f"env --root {BUILT} --claim many-drivers",
        f"show --root {BUILT} --claim many-drivers --request gpu",
        f"show --root {BUILT} --claim many-drivers --request gpu --format go",
        f"get --root {BUILT} --claim shared --request nic interfaceName",
        f"topology --root {BUILT}",
        f"validate {BUILT}",
        f"lint {BUILT}",
    )
)


def _device(index: int, driver: str, *, lists: bool = False, network: bool = False) -> dm.Device:
    attributes: dict[str, dm.DeviceAttribute] = {
        "uuid": dm.DeviceAttribute(string=f"GPU-{index:08x}-0b1d-4c55-9a1e-3d2b7c9e0f11"),
        "index": dm.DeviceAttribute(int=index),
        "healthy": dm.DeviceAttribute(bool=index % 2 == 0),
        "driverVersion": dm.DeviceAttribute(version="570.124.6"),
        f"{dm.STANDARD_DOMAIN}/pciBusID": dm.DeviceAttribute(string=f"0000:{index:02x}:00.0"),
        f"{dm.STANDARD_DOMAIN}/numaNode": dm.DeviceAttribute(int=index % 2),
    }
    if lists:
        attributes["cores"] = dm.DeviceAttribute(ints=(index, index + 1))
        attributes["names"] = dm.DeviceAttribute(strings=(f"it's {index}", "a b"))
    data = None
    if network:
        data = dm.NetworkDeviceData(
            interface_name=f"net{index}",
            ips=(f"10.0.0.{index}/24",),
            hardware_address=f"b8:3f:d2:00:00:{index:02x}",
        )
    return dm.Device(driver, f"pool-{index % 3}", f"dev-{index}", attributes, data)


def _write(root: Path, claim: str, request: str, driver: str, devices: list[dm.Device]) -> None:
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name=claim, namespace="ml", uid=f"uid-{claim}", generation=2),
        requests=(dm.DeviceMetadataRequest(request, tuple(devices)),),
    )
    directory = root / "resourceclaims" / claim / request
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{driver}-metadata.json").write_bytes(dm.encode(md))


def build_tree(root: Path) -> None:
    """The built tree: the same bytes whatever code reads it."""
    for i in range(12):
        _write(root, f"claim-{i}", "gpu", "gpu.example.com", [_device(i, "gpu.example.com")])
    for i in range(15):
        driver = f"d{i}.example.com"
        _write(root, "many-drivers", "gpu", driver, [_device(i, driver, lists=i % 4 == 0)])
    _write(
        root,
        "shared",
        "nic",
        "a.example.com",
        [_device(1, "a.example.com", network=True), _device(2, "a.example.com", lists=True)],
    )
    _write(
        root,
        "shared",
        "nic",
        "b.example.com",
        [dm.Device("b.example.com", "p", "bare"), _device(3, "b.example.com", network=True)],
    )
    _write(root, "single", "one", "c.example.com", [_device(7, "c.example.com", lists=True)])
    broken = root / "resourceclaims" / "broken" / "r"
    broken.mkdir(parents=True)
    (broken / "x.example.com-metadata.json").write_bytes(b'{"kind":"DeviceMetadata",')


def run(command: tuple[str, ...], built: Path) -> dict[str, object]:
    argv = [part.replace(BUILT, str(built)) for part in command]
    env = dict(os.environ, COLUMNS="100", PYTHONPATH=str(REPO))
    env.pop("DRA_METADATA_ROOT", None)
    done = subprocess.run(
        [sys.executable, "-m", "dra_metadata", *argv],
        capture_output=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    return {
        "code": done.returncode,
        "stdout": done.stdout.decode("utf-8", "surrogateescape").replace(str(built), BUILT),
        "stderr": done.stderr.decode("utf-8", "surrogateescape").replace(str(built), BUILT),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pinned") / "root"
    build_tree(root)
    return root


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_output_is_what_was_pinned(command: tuple[str, ...], built: Path) -> None:
    """The command's stdout, stderr and exit code are the pinned ones, byte for byte."""
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    assert run(command, built) == pinned[" ".join(command)]


def test_every_command_is_pinned() -> None:
    """The pinned file holds exactly the commands tested (none stale, none missing)."""
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    assert sorted(pinned) == sorted(" ".join(command) for command in COMMANDS)


def main() -> None:
    """Regenerate the pinned outputs with the code on ``PYTHONPATH`` (default: this checkout)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        build_tree(root)
        outputs = {" ".join(command): run(command, root) for command in COMMANDS}
    PINNED.parent.mkdir(parents=True, exist_ok=True)
    PINNED.write_text(json.dumps(outputs, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(outputs)} outputs to {PINNED}")


if __name__ == "__main__":
    main()
