"""Every door gives the standard's one answer, whatever a driver wrote.

Hypothesis draws devices whose standard attributes (``numaNode``, ``pciBusID``,
``pcieRoot``, as the standard name, the driver's own and the names drivers publish
today) hold any value of any kind: a node, ``-1``, a list, a string where an int is
meant, a bool, two PCIe roots, an address in NVML's form or in none. For every
standard question (``pciBusID``, ``numaNode``, ``numaNodes``, ``pcieRoot``,
``pcieRoots``, unqualified and in the standard domain) the model's answer
(``dra_metadata._standard.answer``) is what each door says:

- ``attribute()`` returns its value and ``require()`` returns it or raises with its why
  (``MalformedAttributeError`` for a value the standard does not define);
- ``has_attribute()`` and ``has=`` hold exactly when there is a value;
- ``get NAME`` (the real command, in this process) prints it, exits 1 with the why, or
  exits 65 with the malformed message;
- ``env`` exports ``NUMA_NODE``, ``NUMA_NODES``, ``PCI_BUS_ID``, ``PCIE_ROOT`` and
  ``PCIE_ROOTS`` exactly as the unqualified answers say, or refuses the malformed;
- the topology places the device on the answer's NUMA nodes, PCI address and roots.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._cli import main
from dra_metadata._env import request_variables
from dra_metadata._envtext import format_value
from dra_metadata._mounted import MountedDevice
from dra_metadata._standard import Answer, answer
from dra_metadata._topology import build

STD = "resource.kubernetes.io/"
QUESTIONS = ("pciBusID", "numaNode", "numaNodes", "pcieRoot", "pcieRoots")
NAMES = (*QUESTIONS, *(STD + question for question in QUESTIONS))
#: The env variable of each unqualified question, on device 0 of request R of claim C.
VARIABLES = {
    "numaNode": "DRA_C_R_0_NUMA_NODE",
    "numaNodes": "DRA_C_R_0_NUMA_NODES",
    "pciBusID": "DRA_C_R_0_PCI_BUS_ID",
    "pcieRoot": "DRA_C_R_0_PCIE_ROOT",
    "pcieRoots": "DRA_C_R_0_PCIE_ROOTS",
}
DRIVERS = ("gpu.nvidia.com", "dra.cpu", "x.example.com")

_texts = st.sampled_from(
    ("1", "0000:3b:00.0", "00000000:3B:00.0", "pci0000:3a", "pci0000:17", "x", "")
)
_ints = st.integers(-2, 3)
#: Any value of any kind, weighted to what drivers write and get wrong.
_values = st.one_of(
    _ints.map(lambda v: dm.DeviceAttribute(int=v)),
    st.lists(_ints, min_size=1, max_size=3).map(lambda v: dm.DeviceAttribute(ints=tuple(v))),
    _texts.map(lambda v: dm.DeviceAttribute(string=v)),
    st.lists(_texts, min_size=1, max_size=3).map(lambda v: dm.DeviceAttribute(strings=tuple(v))),
    st.booleans().map(lambda v: dm.DeviceAttribute(bool=v)),
)
_KEYS = (
    "numaNode",
    STD + "numaNode",
    "dra.cpu/numaNodeID",
    "gpu.nvidia.com/numa",
    "pciBusID",
    STD + "pciBusID",
    "gpu.nvidia.com/pcieBusID",
    STD + "pcieRoot",
)
devices = st.builds(
    lambda driver, attributes: dm.Device(driver, "pool", "dev", attributes),
    st.sampled_from(DRIVERS),
    st.dictionaries(st.sampled_from(_KEYS), _values, max_size=4),
)


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    """A metadata root that each example rewrites: claim ``c``, request ``r``."""
    with tempfile.TemporaryDirectory() as scratch:
        yield Path(scratch)


def _publish(root: Path, device: dm.Device) -> None:
    """``device`` as the one device of claim ``c``, request ``r`` (a new file each time)."""
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="default", uid="u-1", generation=1),
        requests=(dm.DeviceMetadataRequest("r", (device,)),),
    )
    directory = root / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{device.driver}-metadata.json"
    for old in directory.iterdir():
        old.unlink()
    temporary = directory / ".new"
    temporary.write_bytes(dm.encode(md))
    os.replace(temporary, path)


def _get(root: Path, name: str) -> tuple[int, str, str]:
    """``dra-metadata get NAME`` of the one device, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["get", "--root", str(root), "--claim", "c", "--request", "r", name])
    return code, out.getvalue(), err.getvalue()


def _check_value_doors(device: dm.Device, name: str, said: Answer) -> None:
    """attribute(), require(), has_attribute() and has= give the answer."""
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("r", (device,)),))
    assert device.attribute(name) == said.value, name
    assert dm.has_attribute(name)(md) is (said.value is not None), name
    mounted = MountedDevice(device, "claim", "c", "r", "r")
    assert mounted.attribute(name) == said.value, name
    if said.value is not None:
        assert device.require(name) == said.value
    elif said.malformed:
        with pytest.raises(dm.MalformedAttributeError) as malformed:
            device.require(name)
        assert str(malformed.value) == said.why
    else:
        with pytest.raises(dm.AttributeNotFoundError) as absent:
            device.require(name)
        if said.why:
            assert str(absent.value).endswith(said.why), name


def _check_get(root: Path, name: str, said: Answer) -> None:
    """``get NAME`` prints the answer, or says why there is none."""
    code, out, err = _get(root, name)
    if said.malformed:
        assert (code, out) == (65, ""), (name, err)
        assert said.why in err
    elif said.value is None:
        assert (code, out) == (1, ""), (name, err)
        assert said.why in err
    else:
        assert (code, out) == (0, format_value(said.value) + "\n"), (name, err)


def _check_env(device: dm.Device, answers: dict[str, Answer]) -> None:
    """``env``'s device variables are the unqualified answers, or it refuses them all."""
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("r", (device,)),))
    if any(found.malformed for found in answers.values()):
        with pytest.raises(dm.MalformedAttributeError):
            request_variables("DRA_C_R_", "c/r", md)
        return
    variables = {v.name: v.value for v in request_variables("DRA_C_R_", "c/r", md)}
    for question, variable in VARIABLES.items():
        value = answers[question].value
        expected = None if value is None else format_value(value)
        assert variables.get(variable) == expected, (question, variables)


def _check_topology(device: dm.Device, answers: dict[str, Answer]) -> None:
    """The topology places the device where the answers say."""
    placed = build([MountedDevice(device, "claim", "c", "r", "r")]).devices[0]
    assert placed.numa_nodes == (answers["numaNodes"].value or ())
    assert placed.pci_bus_id == answers["pciBusID"].value
    assert placed.pcie_roots == (answers["pcieRoots"].value or ())


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(device=devices)
def test_every_door_gives_the_one_answer(root: Path, device: dm.Device) -> None:
    """For every standard name, every door says what ``answer()`` says."""
    _publish(root, device)
    answers = {name: answer(device, name) for name in NAMES}
    for name, said in answers.items():
        _check_value_doors(device, name, said)
        _check_get(root, name, said)
    _check_env(device, answers)
    _check_topology(device, answers)


def test_a_value_of_no_standard_kind_is_no_value_with_why_everywhere(root: Path) -> None:
    """``numaNode: "1"`` (a string): no NUMA node in any door, and each says why."""
    device = dm.Device(
        "x.example.com", "pool", "dev", {STD + "numaNode": dm.DeviceAttribute(string="1")}
    )
    _publish(root, device)
    said = answer(device, "numaNode")
    assert said.malformed
    assert said.value is None
    assert "holds '1', which is not a NUMA node number" in said.why
    assert device.numa_node is None
    assert device.attribute("numaNode") is None
    code, out, err = _get(root, "numaNode")
    assert (code, out) == (65, "")
    assert "holds '1'" in err
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("r", (device,)),))
    with pytest.raises(dm.MalformedAttributeError, match="holds '1'"):
        request_variables("DRA_C_R_", "c/r", md)
    with pytest.raises(dm.MalformedAttributeError, match="holds '1'"):
        device.require("numaNodes")


def test_two_pcie_roots_are_one_set_and_no_single_root(root: Path) -> None:
    """A set of two roots: ``pcieRoots`` answers both, ``pcieRoot`` none, and says why."""
    roots = ("pci0000:17", "pci0000:3a")
    device = dm.Device(
        "dra.cpu", "pool", "dev", {STD + "pcieRoot": dm.DeviceAttribute(strings=roots)}
    )
    _publish(root, device)
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("r", (device,)),))
    assert device.require("pcieRoots") == roots
    assert device.pcie_roots == roots
    assert device.pcie_root is None
    assert not dm.has_attribute("pcieRoot")(md)
    with pytest.raises(dm.AttributeNotFoundError, match="no first one"):
        device.require("pcieRoot")
    assert _get(root, "pcieRoots")[:2] == (0, "pci0000:17,pci0000:3a\n")
    code, _, err = _get(root, "pcieRoot")
    assert code == 1
    assert "a set of roots has no first one (KEP-5491); ask pcieRoots" in err
    variables = {v.name: v.value for v in request_variables("DRA_C_R_", "c/r", md)}
    assert variables["DRA_C_R_0_PCIE_ROOTS"] == "pci0000:17,pci0000:3a"
    assert "DRA_C_R_0_PCIE_ROOT" not in variables


def test_require_numa_nodes_answers_what_get_prints(root: Path) -> None:
    """``require("numaNodes")`` is the list ``get numaNodes`` prints, the physical node first."""
    device = dm.Device("dra.cpu", "pool", "dev", {"numaNode": dm.DeviceAttribute(ints=(1, 0))})
    _publish(root, device)
    assert device.require("numaNodes") == (1, 0)
    assert device.require("numaNode") == 1
    assert _get(root, "numaNodes")[:2] == (0, "1,0\n")
    assert _get(root, "numaNode")[:2] == (0, "1\n")
