"""The typed model: attribute kinds, name resolution, standard attributes, wire form."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

import dra_metadata as dm
from dra_metadata._model import ATTRIBUTE_KINDS

A = dm.DeviceAttribute


def device(**attributes: dm.DeviceAttribute) -> dm.Device:
    return dm.Device("gpu.example.com", "pool", "gpu-0", attributes=dict(attributes))


@pytest.mark.parametrize(
    ("attribute", "kind", "value"),
    [
        (A(int=0), "int", 0),
        (A(bool=False), "bool", False),
        (A(string=""), "string", ""),
        (A(version="1.2.3"), "version", "1.2.3"),
        (A(ints=(1, 2)), "ints", (1, 2)),
        (A(bools=(True,)), "bools", (True,)),
        (A(strings=("a",)), "strings", ("a",)),
        (A(versions=("1.0.0",)), "versions", ("1.0.0",)),
        (A(), None, None),
        (A(ints=()), None, None),
    ],
)
def test_attribute_value_keeps_its_kind(
    attribute: dm.DeviceAttribute, kind: str | None, value: object
) -> None:
    """An attribute reports its kind and gives its value typed that way; empty lists are unset."""
    assert attribute.kind == kind
    assert attribute.value == value
    assert type(attribute.value) is type(value) or isinstance(attribute.value, dm.VersionValue)


SAMPLE_MEMBERS: dict[str, object] = {
    "int": 7,
    "bool": True,
    "string": "s",
    "version": "1.0.0",
    "ints": (1,),
    "bools": (False,),
    "strings": ("t",),
    "versions": ("2.0.0",),
}


@pytest.mark.parametrize("first", ATTRIBUTE_KINDS)
def test_value_is_the_first_member_set_in_go_order(first: str) -> None:
    """With several members set, value is the one kind names: the first in ATTRIBUTE_KINDS."""
    later = ATTRIBUTE_KINDS[ATTRIBUTE_KINDS.index(first) :]
    for other in later:
        attribute = A(**{kind: SAMPLE_MEMBERS[kind] for kind in {first, other}})  # type: ignore[arg-type]
        assert attribute.kind == first
        assert attribute.value == SAMPLE_MEMBERS[first]
    empty_lists_first = {"ints": (), "strings": (), first: SAMPLE_MEMBERS[first]}
    assert A(**empty_lists_first).value == SAMPLE_MEMBERS[first]  # type: ignore[arg-type]


def test_versions_parse_with_semver_on_demand() -> None:
    """Version values are strings that parse to semver.Version when asked."""
    value = A(version="1.2.3-rc.1+build.7").value
    assert isinstance(value, dm.VersionValue)
    assert value.semver.prerelease == "rc.1"
    assert [v.semver.major for v in A(versions=("1.0.0", "2.0.0")).value] == [1, 2]  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="not valid SemVer"):
        dm.VersionValue("570.124").semver  # noqa: B018 - the property raises


def test_unqualified_names_resolve_in_the_driver_domain() -> None:
    """`model` and `<driver>/model` name the same attribute; other domains do not match."""
    dev = device(model=A(string="A100"), **{"dra.net/ifName": A(string="eth0")})
    assert dev.attribute("model") == dev.attribute("gpu.example.com/model") == "A100"
    assert dev.attribute("other.example.com/model") is None
    assert dev.attribute("dra.net/ifName") == "eth0"
    assert dev.attribute("ifName") is None
    assert dev.attribute("missing", default=7) == 7
    qualified = device(**{"gpu.example.com/uuid": A(string="u")})
    assert qualified.attribute("uuid") == "u"
    assert set(dev.qualified_attributes()) == {"gpu.example.com/model", "dra.net/ifName"}


STD_PCI = "resource.kubernetes.io/pciBusID"


def test_standard_attributes_have_properties() -> None:
    """pciBusID, pcieRoot and numaNode (scalar or list) are read from resource.kubernetes.io."""
    dev = device(
        **{
            "resource.kubernetes.io/pciBusID": A(string="0000:3b:00.0"),
            "resource.kubernetes.io/pcieRoot": A(string="pci0000:3a"),
            "resource.kubernetes.io/numaNode": A(ints=(5, 4, 6)),
        }
    )
    assert (dev.pci_bus_id, dev.pcie_root, dev.numa_node, dev.numa_nodes) == (
        "0000:3b:00.0",
        "pci0000:3a",
        5,  # the physical node: a list's first element (KEP-6072)
        (5, 4, 6),
    )
    scalar = device(**{"resource.kubernetes.io/numaNode": A(int=1)}, numaNode=A(int=9))
    # numaNode names the driver's own attribute first, as everywhere (and they disagree)
    assert (scalar.numa_node, scalar.numa_nodes) == (9, (9,))
    bare = device(numaNode=A(int=9), pciBusID=A(string="x"))
    # A numaNode in the driver's own domain counts (ROCm's gpu.amd.com/numaNode); "x" is no address.
    assert (bare.numa_node, bare.pci_bus_id, bare.pcie_root) == (9, None, None)
    roots = device(**{"resource.kubernetes.io/pcieRoot": A(strings=("pci0000:00", "pci0000:3a"))})
    assert (roots.pcie_root, roots.pcie_roots) == (None, ("pci0000:00", "pci0000:3a"))


def test_pci_bus_id_is_the_standard_form_from_the_standard_attribute_or_an_alias() -> None:
    """NVIDIA's 8-digit pcieBusID reads as 0000:18:00.0, says where it came from, keeps its text."""
    nvidia = dm.Device("gpu.nvidia.com", "p", "g", {"pcieBusID": A(string="00000000:18:00.0")})
    assert (nvidia.pci_bus_id, nvidia.pci_bus_id_source) == (
        "0000:18:00.0",
        "gpu.nvidia.com/pcieBusID",
    )
    assert nvidia.attribute("pcieBusID") == "00000000:18:00.0"
    both = dm.Device(
        "gpu.nvidia.com",
        "p",
        "g",
        {"pcieBusID": A(string="00000000:18:00.0"), STD_PCI: A(string="0000:19:00.0")},
    )
    assert (both.pci_bus_id, both.pci_bus_id_source) == ("0000:19:00.0", STD_PCI)
    hostile = dm.Device("dra.net", "p", "n", {STD_PCI: A(string="0000:3b:00.0 -d /x/evil.so")})
    assert (hostile.pci_bus_id, hostile.pci_bus_id_source) == (None, STD_PCI)


def test_device_kind_follows_one_set_of_rules() -> None:
    """A pass-through GPU with uuid and productName is a gpu; the topology says the same."""
    vfio = dm.Device(
        "vfio.example.com", "p", "v", {"uuid": A(string="GPU-1"), "productName": A(string="A100")}
    )
    assert vfio.device_kind == "gpu"
    assert dm.Device("fpga.example.com", "p", "f").device_kind == "other"


def test_model_is_frozen() -> None:
    """Decoded objects are immutable."""
    md = dm.DeviceMetadata()
    with pytest.raises(AttributeError):
        md.pod_claim_name = "x"


def test_to_dict_follows_go_omitempty() -> None:
    """Wire form: metadata always there, zero pointers kept, empty lists and zero ints dropped."""
    md = dm.DeviceMetadata(
        pod_claim_name="",
        requests=(
            dm.DeviceMetadataRequest(
                "",
                (dm.Device("d", "p", "n", {"a": A(int=0, ints=())}, dm.NetworkDeviceData()),),
            ),
        ),
    )
    assert md.to_dict() == {
        "metadata": {},
        "podClaimName": "",
        "requests": [
            {
                "name": "",
                "devices": [
                    {
                        "driver": "d",
                        "pool": "p",
                        "name": "n",
                        "attributes": {"a": {"int": 0}},
                        "networkData": {},
                    }
                ],
            }
        ],
    }


def test_devices_iterates_every_request() -> None:
    """devices() yields (request, device) pairs in order; request() finds by exact name."""
    one, two = dm.Device("d", "p", "a"), dm.Device("d", "p", "b")
    md = dm.DeviceMetadata(
        requests=(dm.DeviceMetadataRequest("x", (one,)), dm.DeviceMetadataRequest("y/z", (two,)))
    )
    assert [(r.name, d.name) for r, d in md.devices()] == [("x", "a"), ("y/z", "b")]
    assert md.request("y/z") is md.requests[1]
    assert md.request("y") is None


def test_unknown_fields_are_not_part_of_the_model() -> None:
    """The model itself rejects unknown fields (the decoder handles Go's leniency)."""
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"kind": "DeviceMetadata", "bogus": 1}, dm.DeviceMetadata)


def _deep_fields_v1(depth: int) -> bytes:
    """A v1beta1 object whose one managedFields entry has ``fieldsV1`` nested ``depth`` deep."""
    fields = b'{"a":' * depth + b"1" + b"}" * depth
    return (
        b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",'
        b'"metadata":{"name":"c","managedFields":[{"manager":"m","fieldsV1":' + fields + b"}]}}"
    )


#: Whether Python holds a fieldsV1 5000 levels deep. msgspec's decoder counts its levels
#: against CPython's C recursion limit: ``sys.getrecursionlimit()`` (1000 by default) on
#: 3.11, a fixed 1500 on 3.12, a fixed 10000 on 3.13 (less what the caller's stack already
#: uses). Go's decoder allows 10000 levels in the whole stream, so 9996 in fieldsV1 here.
HOLDS_5000_LEVELS = sys.version_info >= (3, 13)
TOO_DEEP = r"managedFields\[0\]\.fieldsV1 is nested too deeply"


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit while the test runs, whatever ran before it.

    In-process mypy (``mypy.api.run``) raises the limit to 16384 and leaves it there.
    """
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


@pytest.mark.usefixtures("default_recursion_limit")
def test_fields_v1_as_deep_as_go_allows_is_a_dict_or_a_decode_error_by_python() -> None:
    """5000 levels decode; to_dict() gives them on 3.13, names the field on 3.11 and 3.12."""
    md = dm.decode(_deep_fields_v1(5000))
    if HOLDS_5000_LEVELS:
        body: Any = md.to_dict()
        value = body["metadata"]["managedFields"][0]["fieldsV1"]
        depth = 0
        while isinstance(value, dict):
            assert list(value) == ["a"]
            value, depth = value["a"], depth + 1
        assert (depth, value) == (5000, 1)
    else:
        with pytest.raises(dm.DecodeError, match=TOO_DEEP):
            md.to_dict()
    assert [e.field for e in dm.validate(md)] == ["metadata.managedFields[0].operation"]
    assert dm.decode(dm.encode(md, [dm.V1BETA1])).metadata == md.metadata


@pytest.mark.usefixtures("default_recursion_limit")
def test_fields_v1_too_deep_for_python_is_a_decode_error_not_a_recursion_error() -> None:
    """A fieldsV1 deeper than any supported Python holds: to_dict() names the field."""
    depth = 100_000  # deeper than Go decodes too, so built in code
    entry = dm.ManagedFieldsEntry(manager="m", fields_v1='{"a":' * depth + "1" + "}" * depth)
    md = dm.DeviceMetadata(metadata=dm.ObjectMeta(name="c", managed_fields=(entry,)))
    with pytest.raises(dm.DecodeError, match=TOO_DEEP):
        md.to_dict()


def test_to_dict_of_a_fieldsv1_number_no_float_holds_is_a_decode_error() -> None:
    """A fieldsV1 number like 1e400 (Go keeps it raw) is our DecodeError; encode() writes it."""
    entry = dm.ManagedFieldsEntry(manager="m", fields_v1='{"f:x":1e400}')
    md = dm.DeviceMetadata(metadata=dm.ObjectMeta(name="c", managed_fields=(entry,)))
    with pytest.raises(dm.DecodeError, match=r"fieldsV1 cannot become Python objects"):
        md.to_dict()
    assert b"1e400" in dm.encode(md)
