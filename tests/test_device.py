"""One normalised device: every door gives the model's answer to the device questions.

A table of questions (PCI address, NUMA nodes, the single NUMA node, PCIe roots,
kind) x doors (the Python properties, ``TopologyDevice``, ``get``, ``env``,
``topology --json``, ``doctor``) over the sample trees, the real-driver ones
included; property tests for the list semantics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._envtext import env_name
from dra_metadata._standard import intersect, normal_pci_address
from examples import make_topology_tree
from tests.conftest import REPO, SAMPLE_ROOT
from tests.test_topology import STD, TOPOLOGY_ROOT, run, topology_of

A = dm.DeviceAttribute
REAL_ROOT = REPO / "examples" / "real-drivers-tree"
TREES = (SAMPLE_ROOT, TOPOLOGY_ROOT, REAL_ROOT)


def test_real_drivers_tree_is_what_the_generator_writes(tmp_path: Path) -> None:
    """The committed real-drivers tree equals a fresh run of make_topology_tree.py."""
    make_topology_tree.write_tree(str(tmp_path), make_topology_tree.real_driver_files())
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(REAL_ROOT): p.read_bytes() for p in REAL_ROOT.rglob("*") if p.is_file()
    }
    assert fresh == committed


def _requests(inv: dm.Inventory) -> dict[tuple[str, str, str], list[dm.MountedDevice]]:
    found: dict[tuple[str, str, str], list[dm.MountedDevice]] = {}
    for device in inv.devices():
        found.setdefault((device.kind, device.claim, device.base_request), []).append(device)
    return found


def _text(value: object) -> str | None:
    if value is None or value == ():
        return None
    if isinstance(value, tuple):
        return ",".join(str(item) for item in value)
    return str(value)


#: question -> (property of a MountedDevice, the get NAME, the env suffix, the JSON key)
#: Each property is asked of a MountedDevice, its Device and its TopologyDevice alike.
QUESTIONS: dict[str, tuple[Callable[[Any], object], str, str, str]] = {
    "pci_bus_id": (lambda d: d.pci_bus_id, "pciBusID", "PCI_BUS_ID", "pciBusID"),
    "numa_nodes": (lambda d: d.numa_nodes, "numaNodes", "NUMA_NODES", "numaNodes"),
    "numa_node": (lambda d: d.numa_node, "numaNode", "NUMA_NODE", "numaNode"),
    "pcie_roots": (lambda d: d.pcie_roots, "pcieRoots", "PCIE_ROOTS", "pcieRoots"),
}


@pytest.mark.parametrize("root", TREES, ids=lambda p: p.name)
@pytest.mark.parametrize("question", sorted(QUESTIONS))
def test_every_door_gives_the_properties_answer(root: Path, question: str) -> None:
    """Python properties, TopologyDevice, get, env, topology --json give one answer."""
    prop, get_name, suffix, key = QUESTIONS[question]
    inv = dm.inventory(root)
    topo = inv.topology()
    env = dm.env_vars(root=root)
    code, out, _ = run("topology", "--root", str(root), "--json")
    assert code == 0
    listed = {
        (d["claimKind"], d["claim"], d["request"], d["name"]): d for d in json.loads(out)["devices"]
    }
    seen = 0
    for (kind, claim, request), devices in _requests(inv).items():
        prefix = f"DRA_{env_name(claim)}_{env_name(request)}_"
        answers = [prop(device) for device in devices]
        for index, (device, answer) in enumerate(zip(devices, answers, strict=True)):
            assert prop(device.device) == answer  # the model's Device
            assert prop(topo.find(device)) == answer
            entry = listed[(kind, claim, device.request, device.name)]
            assert entry[key] == (list(answer) if isinstance(answer, tuple) else answer)
            assert env.get(f"{prefix}{index}_{suffix}") == _text(answer), (prefix, index, suffix)
            seen += 1 if answer not in (None, ()) else 0
        option = "--claim" if kind == "claim" else "--template-claim"
        code, out, err = run(
            "get", "--root", str(root), option, claim, "--request", request, get_name
        )
        if all(answer not in (None, ()) for answer in answers):
            assert (code, out.splitlines()) == (0, [_text(a) for a in answers]), err
        else:
            assert code in (1, 65)
            assert out == ""
    assert seen  # every tree answers the question for some device


@pytest.mark.parametrize("root", TREES, ids=lambda p: p.name)
def test_kind_and_doctor_read_the_same_answer(root: Path) -> None:
    """Device.device_kind is the topology's kind; doctor expects the property's PCI address."""
    topo = dm.inventory(root).topology()
    report = dm.check_live(root, sys_root="/nonexistent", proc_root="/nonexistent")
    expected = {f.subject: f.expected for f in report.findings if f.check == "pci-device"}
    for device in topo.devices:
        assert device.mounted.device_kind == device.kind
        assert expected.get(f"{device.label} {device.name}") == device.pci_bus_id


def test_the_sample_vfio_gpu_is_a_gpu() -> None:
    """The pass-through GPU with uuid and productName is in topo.gpus, as in devices(has=uuid)."""
    inv = dm.inventory(SAMPLE_ROOT)
    gpus = {d.id for d in inv.topology().gpus}
    assert {d.id for d in inv.devices(has="uuid")} <= gpus
    assert "vfio.gpu.example.com/worker-1/gpu-3" in gpus


def test_get_pci_bus_id_names_the_alias_on_stderr() -> None:
    """get pciBusID of NVIDIA GPUs: the standard form, and stderr says it came from pcieBusID."""
    gpus = ("get", "--root", str(TOPOLOGY_ROOT), "--template-claim", "gpus", "--request", "gpu")
    code, out, err = run(*gpus, "pciBusID")
    assert (code, out) == (0, "0000:18:00.0\n0000:86:00.0\n")
    assert "from gpu.nvidia.com/pcieBusID, in the standard form" in err
    code, out, _ = run(*gpus, "gpu.nvidia.com/pcieBusID")
    assert (code, out) == (0, "00000000:18:00.0\n00000000:86:00.0\n")  # as written


def test_get_numa_node_of_a_list_prints_the_physical_node() -> None:
    """numaNode of a device local to [1, 0] is 1, its physical node (KEP-6072); numaNodes both."""
    args = ("get", "--root", str(SAMPLE_ROOT), "--claim", "nic", "--request", "eth")
    code, out, err = run(*args, "numaNode")
    assert (code, out) == (0, "1\n")
    assert "the physical node of 1,0" in err
    assert run(*args, "numaNodes")[:2] == (0, "1,0\n")
    assert run(*args, "resource.kubernetes.io/numaNode")[:2] == (0, "1\n")


def test_env_numa_node_is_the_physical_node_and_never_a_list() -> None:
    """NUMA_NODE is the first of NUMA_NODES, never a list; NUMA_NODES keeps the order."""
    for root in TREES:
        variables = dm.env_vars(root=root)
        for name, value in variables.items():
            if name.endswith("_NUMA_NODE"):
                assert "," not in value, (name, value)
                assert variables[name + "S"].split(",")[0] == value, (name, value)
    nic = dm.env_vars(root=SAMPLE_ROOT, claim="nic")
    assert (nic["DRA_NIC_ETH_0_NUMA_NODE"], nic["DRA_NIC_ETH_0_NUMA_NODES"]) == ("1", "1,0")
    assert (nic["DRA_NIC_ETH_NUMA_NODE"], nic["DRA_NIC_ETH_NUMA_NODES"]) == ("1", "1,0")


# Property tests for the list semantics.

nodes = st.lists(st.integers(0, 7), max_size=4, unique=True).map(tuple)
roots = st.lists(
    st.sampled_from(["pci0000:00", "pci0000:17", "pci0000:3a", "pci0000:85"]),
    max_size=3,
    unique=True,
).map(tuple)


@given(nodes, nodes)
def test_intersection_is_symmetric_and_means_a_shared_element(
    a: tuple[int, ...], b: tuple[int, ...]
) -> None:
    """Alignment is a non-empty intersection, whatever the order of either list."""
    assert intersect(a, b) == intersect(b, a) == bool(set(a) & set(b))
    assert intersect(a, b) == intersect(tuple(reversed(a)), b)


@given(
    st.integers(0, 0xFFFFFFFF),
    st.integers(0, 255),
    st.integers(0, 31),
    st.integers(0, 7),
    st.booleans(),
)
def test_pci_normalisation_is_idempotent(
    domain: int, bus: int, slot: int, function: int, upper: bool
) -> None:
    """Any spelling of an address (8-digit domain, upper case) normalises once, then stays."""
    text = f"{domain:08x}:{bus:02x}:{slot:02x}.{function}"
    text = text.upper() if upper else text
    once = normal_pci_address(text)
    assert once is not None
    assert normal_pci_address(once) == once
    assert once == f"{domain:04x}:{bus:02x}:{slot:02x}.{function}"


@given(
    st.one_of(
        st.from_regex(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", fullmatch=True),
        st.text(alphabet="0123456789abcdefABCDEF:.\u0660\u00b2\n", min_size=10, max_size=14),
    )
)
def test_the_standard_form_is_recognised_as_its_pattern_says(text: str) -> None:
    """Text in the standard form (by the pattern) comes back as it is; nothing else does."""
    standard = re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", text, re.ASCII)
    if standard:
        assert normal_pci_address(text) == text
    elif len(text) == 12:  # longer spellings (a 5-digit domain) may normalise to themselves
        assert normal_pci_address(text) != text


@given(st.text(max_size=20))
def test_text_with_a_separator_or_space_is_no_pci_address(text: str) -> None:
    """Nothing with a comma, a space, a slash or a control character passes as an address."""
    if any(ch in text for ch in ", /\n\t\x00-"):
        assert normal_pci_address(text) is None


@given(nodes, nodes, roots, roots)
def test_affinity_follows_the_lists(
    tmp_path_factory: pytest.TempPathFactory,
    a_nodes: tuple[int, ...],
    b_nodes: tuple[int, ...],
    a_roots: tuple[str, ...],
    b_roots: tuple[str, ...],
) -> None:
    """pcie-root when the roots intersect, numa when the nodes do; numa_node is the first."""

    def device(name: str, numa: tuple[int, ...], pcie: tuple[str, ...]) -> dm.Device:
        attributes = {}
        if numa:
            attributes[STD + "numaNode"] = A(ints=numa)
        if pcie:
            attributes[STD + "pcieRoot"] = A(strings=pcie)
        return dm.Device("x.example.com", "p", name, attributes)

    topo = topology_of(
        tmp_path_factory.mktemp("t"), device("a", a_nodes, a_roots), device("b", b_nodes, b_roots)
    )
    first, second = topo.devices
    level = topo.affinity(first, second)
    assert level == topo.affinity(second, first)
    if intersect(a_roots, b_roots):
        assert level == "pcie-root"
    elif a_nodes and b_nodes:
        assert level == ("numa" if intersect(a_nodes, b_nodes) else "different")
    assert first.numa_node == (a_nodes[0] if a_nodes else None)
    assert first.numa_nodes == a_nodes
