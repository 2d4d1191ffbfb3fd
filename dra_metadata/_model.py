"""The typed model of a ``DeviceMetadata`` object.

Every class is a frozen :class:`msgspec.Struct` with snake_case attributes and the
camelCase wire names of the Kubernetes API (``metadata.resource.k8s.io``). The
classes double as the decoder's target types, so their field order is the Go
struct order and their defaults mirror Go's zero values and ``omitempty`` rules.
Treat the ``dict`` attributes (``attributes``, ``labels``, ``annotations``) as
read-only, as the rest of the object is.

Every API version (:mod:`._versions`) carries the same fields; a decoded object
remembers the version it came from in :attr:`DeviceMetadata.api_version`.

These classes are the one statement of the wire fields: their names, their order
(Go's struct order) and whether Go omits them when empty (a field with a default
is ``omitempty``). The exact decoder's Go types, lint's known keys and the
network field names are derived from them (:func:`wire_names`).

Annotations here are real types, not strings (no ``from __future__ import
annotations``): building the msgspec decoder then takes a third of the time,
which is most of what a command line call spends on its first ``decode()``.
The few that msgspec does not read and that would build a ``typing`` object
when the module loads (a return type, a module constant's) are written as
strings instead.

The device questions
====================

The PCI address, PCIe roots, NUMA nodes and kind of a device are answered
once, here, beside the attributes they are read from. Every door
(:class:`~dra_metadata.Device` and ``MountedDevice`` properties, the topology,
``get``, ``env`` and its profiles, ``doctor``) reads these answers; none reads
the attributes behind them on its own.

Names
-----

A name means one thing through every door (:func:`lookup`): the key as given,
the same attribute in the driver's domain, the standard attribute of that name,
then the names drivers publish for it today (:data:`STANDARD_ALIASES`).

PCI address
-----------

``pciBusID`` as :func:`lookup` finds it (the driver's own, the standard
attribute, NVIDIA's ``pcieBusID``, SR-IOV's and dranet's ``pciAddress``, AMD's
``pciAddr``: sources in docs/topology.md), normalised to the standard form
(``0000:18:00.0``); the attribute itself stays readable as written. A value that
is no PCI address is none: the doors that print the standard form refuse it
with one message (:func:`standard_problem`).

NUMA nodes and PCIe roots
-------------------------

``numaNode`` as :func:`lookup` finds it, meaning what KEP-6072 and the Go helper
``deviceattribute.GetNUMANodeAttribute`` (v0.37.2) define: an int is the
device's physical node; a list starts with the physical node, then the
same-socket nodes at the minimum SLIT distance, and is a set for matching; a
negative node ("no NUMA affinity") is never published and is no node here.
``numa_node`` is the physical node, ``numa_nodes`` the list as published.
``pcie_roots`` is the standard ``pcieRoot`` (``pci<domain>:<bus>``), a string or
a set of roots; ``pcie_root`` only when there is one. Two devices are aligned
when their lists intersect (KEP-6072, KEP-5491).

Kinds
-----

The first rule that matches decides (:func:`device_kind`):

1. a device with network data is a ``nic``;
2. a known driver (:data:`DRIVER_KINDS`);
3. a driver whose domain has a ``gpu`` label (``gpu.nvidia.com``,
   ``vfio.gpu.example.com``) is a ``gpu``;
4. an attribute only one kind publishes: ``dra.net/ifName`` -> ``nic``,
   ``dra.cpu/cpuID`` -> ``cpu``; a ``uuid`` with a ``productName`` (what GPU
   drivers publish for a GPU, a MIG device or a pass-through GPU) -> ``gpu``;
5. else ``other``.

>>> from dra_metadata import Device, DeviceAttribute as A
>>> gpu = Device("gpu.nvidia.com", "p", "gpu-0", {"pcieBusID": A(string="00000000:18:00.0")})
>>> gpu.pci_bus_id, gpu.pci_bus_id_source, device_kind(gpu)
('0000:18:00.0', 'gpu.nvidia.com/pcieBusID', 'gpu')
>>> normal_pci_address("0000:3b:00.0 -d /x/evil.so") is None
True
"""

import re
from collections.abc import Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, TypeAlias

import msgspec
import msgspec.structs

from ._versions import V1ALPHA1, V1BETA1

if TYPE_CHECKING:
    import semver

__all__ = [
    "ATTRIBUTE_KINDS",
    "DEVICE_KINDS",
    "DOMAIN_SEPARATOR",
    "DRIVER_KINDS",
    "LIST_QUESTIONS",
    "NETWORK_FIELDS",
    "NUMA_ATTRIBUTES",
    "PCIE_ROOT_ATTRIBUTE",
    "PCI_BUS_ID_ATTRIBUTES",
    "STANDARD_ALIASES",
    "STANDARD_DOMAIN",
    "V1ALPHA1",
    "V1BETA1",
    "AttributeInput",
    "AttributeKind",
    "AttributeValue",
    "Device",
    "DeviceAttribute",
    "DeviceKind",
    "DeviceMetadata",
    "DeviceMetadataRequest",
    "ManagedFieldsEntry",
    "MergedDeviceMetadata",
    "MetadataSource",
    "NetworkDeviceData",
    "NumaNodes",
    "ObjectMeta",
    "OwnerReference",
    "PciAddress",
    "VersionValue",
    "device_kind",
    "has_answer",
    "int_values",
    "intersect",
    "is_pcie_root",
    "known_names",
    "lookup",
    "malformed",
    "no_affinity",
    "normal_pci_address",
    "numa_of",
    "pci_address_of",
    "pcie_roots_of",
    "qualified_entry",
    "standard_asked",
    "standard_name",
    "standard_problem",
    "standard_values",
    "to_attribute",
    "wire_names",
]

#: Domain of the standard attributes defined by Kubernetes.
STANDARD_DOMAIN: Final = "resource.kubernetes.io"
#: Separates an attribute's domain from its local name.
DOMAIN_SEPARATOR: Final = "/"

# Aliases keep the attribute names ``int``/``bool`` free for DeviceAttribute's fields.
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_Bool = bool
_Str = str

AttributeKind = Literal["int", "bool", "string", "version", "ints", "bools", "strings", "versions"]
#: The members of a DeviceAttribute, in Go's order (also the order of union error texts).
ATTRIBUTE_KINDS: "Final[tuple[AttributeKind, ...]]" = (
    "int",
    "bool",
    "string",
    "version",
    "ints",
    "bools",
    "strings",
    "versions",
)


class VersionValue(str):
    """A semantic version attribute value: a ``str`` that knows it is a version.

    >>> v = VersionValue("1.2.3-rc.1")
    >>> v == "1.2.3-rc.1", v.semver.major
    (True, 1)
    """

    __slots__ = ()

    def __new__(cls, value: str) -> "VersionValue":
        """``value`` as a version attribute value (the text is kept as written)."""
        return super().__new__(cls, value)

    @property
    def semver(self) -> "semver.Version":
        """The value parsed by :mod:`semver` (imported on first use).

        Raises ``ValueError`` when the driver wrote something that is not semver;
        the Kubernetes API documents the format but does not enforce it.
        """
        import semver

        return semver.Version.parse(self)

    def __repr__(self) -> str:
        return f"VersionValue({str.__repr__(self)})"


#: What :meth:`Device.attribute` returns: the attribute's value in its own kind.
AttributeValue = (
    int
    | bool
    | str
    | VersionValue
    | tuple[int, ...]
    | tuple[bool, ...]
    | tuple[str, ...]
    | tuple[VersionValue, ...]
)

_STRUCT_OPTIONS: Final = {
    "frozen": True,
    "gc": False,
    "forbid_unknown_fields": True,
    "repr_omit_defaults": True,
}


class DeviceAttribute(msgspec.Struct, omit_defaults=True, **_STRUCT_OPTIONS):
    """One attribute value; exactly one member is meant to be set.

    A list member counts as set only when it is non-empty (as in Go). Use
    :attr:`value` to get the value in its own kind.

    >>> DeviceAttribute(string="A100").value
    'A100'
    >>> DeviceAttribute(ints=(0, 1)).kind
    'ints'
    """

    #: An integer value (int64); ``None`` when not set.
    int: _Int64 | None = None
    #: A boolean value; ``None`` when not set.
    bool: _Bool | None = None
    #: A string value (at most 64 bytes once validated); ``None`` when not set.
    string: _Str | None = None
    #: A semantic version as written (see :class:`VersionValue`); ``None`` when not set.
    version: _Str | None = None
    #: A list of integers (KEP-5491 list attributes); empty when not set.
    ints: tuple[_Int64, ...] = ()
    #: A list of booleans; empty when not set.
    bools: tuple[_Bool, ...] = ()
    #: A list of strings; empty when not set.
    strings: tuple[_Str, ...] = ()
    #: A list of semantic versions as written; empty when not set.
    versions: tuple[_Str, ...] = ()

    @property
    def kind(self) -> "AttributeKind | None":
        """The first member that is set (``"int"``, ``"strings"`` ...), or ``None``."""
        for kind in ATTRIBUTE_KINDS:
            if getattr(self, kind) not in (None, ()):
                return kind
        return None

    @property
    def value(self) -> AttributeValue | None:
        """The value of the first member that is set, or ``None`` when none is.

        Versions come back as :class:`VersionValue` (a ``str``), lists as tuples.
        """
        # The members in ATTRIBUTE_KINDS order, written out: this runs once per
        # attribute of every device env prints (a test holds it to that order).
        if self.int is not None:
            return self.int
        if self.bool is not None:
            return self.bool
        if self.string is not None:
            return self.string
        if self.version is not None:
            return VersionValue(self.version)
        if self.ints:
            return self.ints
        if self.bools:
            return self.bools
        if self.strings:
            return self.strings
        if self.versions:
            return tuple(VersionValue(v) for v in self.versions)
        return None


class NetworkDeviceData(msgspec.Struct, rename="camel", omit_defaults=True, **_STRUCT_OPTIONS):
    """Network data of a device, often filled in later than its identity.

    ``ips`` are in CIDR notation by convention (``"10.0.0.5/24"``); the API does
    not check their syntax.
    """

    #: The interface name inside the container (``net1``); ``""`` when not known yet.
    interface_name: str = ""
    #: The interface's addresses, CIDR notation by convention (``10.0.0.5/24``).
    ips: tuple[str, ...] = ()
    #: The MAC address as the driver wrote it; ``""`` when not known yet.
    hardware_address: str = ""

    def set_fields(self) -> tuple[tuple[str, str | tuple[str, ...]], ...]:
        """The fields that are set, as ``(wire name, value)`` pairs in Go's order.

        >>> NetworkDeviceData(interface_name="net1", ips=("10.0.0.5/24",)).set_fields()
        (('interfaceName', 'net1'), ('ips', ('10.0.0.5/24',)))
        """
        found: list[tuple[str, str | tuple[str, ...]]] = []
        for wire, attribute in NETWORK_FIELDS.items():
            value = getattr(self, attribute)
            if value:
                found.append((wire, value))
        return tuple(found)


class OwnerReference(msgspec.Struct, rename="camel", omit_defaults=True, **_STRUCT_OPTIONS):
    """A standard Kubernetes owner reference (rarely present in metadata files)."""

    #: API version of the owner (``apiVersion``).
    api_version: str
    #: Kind of the owner.
    kind: str
    #: Name of the owner.
    name: str
    #: UID of the owner.
    uid: str
    #: Whether the owner is the managing controller; ``None`` when not written.
    controller: bool | None = None
    #: ``blockOwnerDeletion`` as written; ``None`` when not written.
    block_owner_deletion: bool | None = None


class ManagedFieldsEntry(msgspec.Struct, rename="camel", omit_defaults=True, **_STRUCT_OPTIONS):
    """A standard Kubernetes managed-fields entry (rarely present in metadata files).

    ``fields_v1`` holds the raw JSON text of ``fieldsV1``.
    """

    #: The field manager's name.
    manager: str = ""
    #: ``Apply`` or ``Update``.
    operation: str = ""
    #: The API version the fields were written in.
    api_version: str = ""
    #: When the entry was written (RFC 3339), or ``None``.
    time: str | None = None
    #: The format of :attr:`fields_v1` (``FieldsV1``).
    fields_type: str = ""
    #: The raw JSON text of ``fieldsV1``, kept byte for byte; ``None`` when absent.
    fields_v1: str | None = None
    #: The subresource the fields were written through, or ``""``.
    subresource: str = ""


class ObjectMeta(msgspec.Struct, rename="camel", omit_defaults=True, **_STRUCT_OPTIONS):
    """The claim's object metadata, as the kubelet plugin writes it.

    Drivers set ``name``, ``namespace``, ``uid`` (of the ResourceClaim) and
    ``generation`` (1 at prepare, bumped by every update). Timestamps are RFC 3339
    strings in UTC (``"2008-01-01T01:01:01Z"``).
    """

    #: The ResourceClaim's name.
    name: str = ""
    #: ``generateName`` as written (rarely set).
    generate_name: str = ""
    #: The ResourceClaim's namespace.
    namespace: str = ""
    #: ``selfLink`` as written (deprecated upstream, rarely set).
    self_link: str = ""
    #: The ResourceClaim's UID: a new UID is a new claim, even under the same name.
    uid: str = ""
    #: ``resourceVersion`` as written (rarely set).
    resource_version: str = ""
    #: 1 when the driver prepared the claim, one more for every update (0 when not written).
    generation: _Int64 = 0
    #: ``creationTimestamp`` (RFC 3339), or ``None``.
    creation_timestamp: str | None = None
    #: ``deletionTimestamp`` (RFC 3339), or ``None``.
    deletion_timestamp: str | None = None
    #: ``deletionGracePeriodSeconds``, or ``None``.
    deletion_grace_period_seconds: _Int64 | None = None
    #: Labels as written (empty when none).
    labels: dict[str, str] = {}
    #: Annotations as written (empty when none).
    annotations: dict[str, str] = {}
    #: Owner references as written (rarely present).
    owner_references: tuple[OwnerReference, ...] = ()
    #: Finalizers as written (rarely present).
    finalizers: tuple[str, ...] = ()
    #: Managed-fields entries as written (rarely present).
    managed_fields: tuple[ManagedFieldsEntry, ...] = ()


class Device(msgspec.Struct, rename="camel", omit_defaults=True, **_STRUCT_OPTIONS):
    """One allocated device: its identity, attributes and network data.

    >>> dev = Device("gpu.example.com", "node-a", "gpu-0",
    ...              attributes={"uuid": DeviceAttribute(string="GPU-1"),
    ...                          "resource.kubernetes.io/numaNode": DeviceAttribute(int=1)})
    >>> dev.attribute("uuid"), dev.attribute("gpu.example.com/uuid"), dev.numa_node
    ('GPU-1', 'GPU-1', 1)
    """

    #: The DRA driver that allocated the device (``gpu.example.com``).
    driver: str
    #: The resource pool the device comes from (often the node's name).
    pool: str
    #: The device's name within its pool (``gpu-0``).
    name: str
    #: The device's attributes by name as written: a name without a domain is in the driver's
    #: domain (use :meth:`attribute` to look one up either way).
    attributes: dict[str, DeviceAttribute] = {}
    #: Network data, when the driver provides it (often later than the identity); ``None``
    #: otherwise.
    network_data: NetworkDeviceData | None = None

    def find_attribute(self, name: str) -> DeviceAttribute | None:
        """The attribute entry ``name`` names, or ``None`` (see :func:`lookup` for the rule).

        An unqualified name (``model``) lives in the device's driver domain, so
        ``model`` and ``<driver>/model`` are the same attribute; the key exactly
        as given is tried first. A name the driver has no attribute of falls back
        to the Kubernetes standard attribute of that name (``pciBusID`` ->
        ``resource.kubernetes.io/pciBusID``), and a standard attribute to the
        names drivers publish for it today (NVIDIA's ``pcieBusID``).

        >>> pci = {"resource.kubernetes.io/pciBusID": DeviceAttribute(string="0000:3b:00.0")}
        >>> dev = Device("d.example.com", "p", "n", attributes=pci)
        >>> dev.attribute("pciBusID"), dev.attribute("d.example.com/pciBusID")
        ('0000:3b:00.0', None)
        """
        attributes = self.attributes
        found = attributes.get(name)  # the key exactly as given: most lookups end here
        if found is not None:
            return found
        answer = lookup(self, name)
        return None if answer is None else answer[1]

    def attribute(self, name: str, default: AttributeValue | None = None) -> AttributeValue | None:
        """The value of attribute ``name`` in its own kind, or ``default``.

        See :func:`lookup` for how names resolve; :meth:`require` says what is
        there instead when nothing is.
        """
        found = self.find_attribute(name)
        if found is None:
            return default
        value = found.value
        return default if value is None else value

    def require(self, name: str) -> AttributeValue:
        """The value of attribute ``name``, or :class:`~dra_metadata.AttributeNotFoundError`.

        The error names the device and the attribute, and the closest names the
        device has ("did you mean 'uuid'?").

        >>> dev = Device("gpu.example.com", "p", "gpu-0", {"uuid": DeviceAttribute(string="GPU-1")})
        >>> dev.require("uuid")
        'GPU-1'
        >>> from dra_metadata import AttributeNotFoundError
        >>> try:
        ...     dev.require("uuuid")
        ... except AttributeNotFoundError as err:
        ...     print(err)
        device gpu.example.com/p/gpu-0 has no attribute 'uuuid'; did you mean 'uuid'?
        """
        value = self.attribute(name)
        if value is not None:
            return value
        from ._errors import AttributeNotFoundError  # only on the way to an error
        from ._text import did_you_mean

        where = f"device {self.driver}/{self.pool}/{self.name}"
        raise AttributeNotFoundError(
            f"{where} has no attribute {name!r}" + did_you_mean(name, known_names(self)),
            name=name,
        )

    def qualified_attributes(self) -> dict[str, DeviceAttribute]:
        """The attributes keyed by fully qualified name (``<driver>/model``)."""
        prefix = self.driver + DOMAIN_SEPARATOR
        return {
            (key if DOMAIN_SEPARATOR in key else prefix + key): value
            for key, value in self.attributes.items()
        }

    @property
    def pci_bus_id(self) -> str | None:
        """The PCI address in the standard form (``0000:3b:00.0``), or ``None``.

        From the standard ``resource.kubernetes.io/pciBusID``, else the names
        drivers publish today (NVIDIA's ``pcieBusID`` ...; see
        :data:`~dra_metadata.PCI_BUS_ID_ATTRIBUTES`); ``None`` too when the
        attribute holds no PCI address. The attribute itself keeps its text.
        """

        found = pci_address_of(self)
        return None if found is None else found.value

    @property
    def pci_bus_id_source(self) -> str | None:
        """The attribute :attr:`pci_bus_id` comes from (``gpu.nvidia.com/pcieBusID``)."""

        found = pci_address_of(self)
        return None if found is None else found.source

    @property
    def pcie_roots(self) -> tuple[str, ...]:
        """``resource.kubernetes.io/pcieRoot`` as a tuple: a string, or a list kept whole."""

        return pcie_roots_of(self)

    @property
    def pcie_root(self) -> str | None:
        """The PCIe root complex (``pci0000:3a``) when there is exactly one, else ``None``."""
        roots = self.pcie_roots
        return roots[0] if len(roots) == 1 else None

    @property
    def numa_nodes(self) -> tuple[int, ...]:
        """The NUMA nodes the device is local to, in the order published: the physical one first.

        From ``numaNode`` as :func:`lookup` finds it: the driver's own, the
        standard ``resource.kubernetes.io/numaNode``, else the names drivers
        publish today (:data:`NUMA_ATTRIBUTES`). A list is kept whole; a
        negative node ("no NUMA affinity") is no node.
        """

        return numa_of(self).nodes

    @property
    def numa_source(self) -> str | None:
        """The attribute :attr:`numa_nodes` comes from (``dra.cpu/numaNodeID``)."""

        return numa_of(self).source

    @property
    def numa_node(self) -> int | None:
        """The device's physical NUMA node: the scalar, or a list's first element (KEP-6072).

        ``None`` when no NUMA node is known (absent, or ``-1``: no NUMA affinity).
        """
        nodes = self.numa_nodes
        return nodes[0] if nodes else None

    @property
    def device_kind(self) -> "DeviceKind":
        """``gpu``, ``nic``, ``cpu``, ``memory`` or ``other``, by the documented rules."""

        return device_kind(self)


class DeviceMetadataRequest(msgspec.Struct, omit_defaults=True, **_STRUCT_OPTIONS):
    """The devices allocated for one request (``gpu`` or ``gpu/high-memory``)."""

    #: The request's name as allocated: ``gpu``, or ``gpu/high-memory`` for a subrequest.
    name: str
    #: The devices allocated for the request, in the driver's order.
    devices: tuple[Device, ...] = ()

    @property
    def base_name(self) -> str:
        """The request name without its subrequest: the directory it lives in."""
        return self.name.partition("/")[0]


class DeviceMetadata(
    msgspec.Struct,
    tag_field="kind",
    tag="DeviceMetadata",
    rename="camel",
    omit_defaults=True,
    **_STRUCT_OPTIONS,
):
    """The device metadata of one claim's request(s), as a container sees it.

    ``api_version`` is the apiVersion of the stream entry that was decoded
    (``""`` for objects built in code). Use :meth:`to_dict` for the wire form.

    >>> md = DeviceMetadata(requests=(DeviceMetadataRequest("gpu"),))
    >>> md.to_dict()
    {'metadata': {}, 'requests': [{'name': 'gpu'}]}
    """

    #: The apiVersion of the stream entry that was decoded (``""`` for an object built in
    #: code).
    api_version: str = ""
    #: The claim's identity: name, namespace, UID and generation.
    metadata: ObjectMeta = ObjectMeta()
    #: The claim's name in the pod spec when it was made from a ResourceClaimTemplate; ``None``
    #: for a claim referenced by name.
    pod_claim_name: str | None = None
    #: The requests this object describes, each with its devices.
    requests: tuple[DeviceMetadataRequest, ...] = ()

    #: Keys of :func:`msgspec.to_builtins` output that are not part of the wire body.
    _NOT_WIRE: ClassVar[tuple[str, ...]] = ("kind", "apiVersion")

    def to_dict(self) -> dict[str, object]:
        """The wire form: camelCase keys, Go's ``omitempty`` rules, no kind/apiVersion.

        For a decoded object this equals what Go's encoder gives for the same
        object; for a merged read it equals Go's merged object. A raw
        ``fieldsV1`` nested deeper than Python can hold raises :class:`DecodeError`.
        """
        from ._errors import DecodeError  # _errors names this module's types: no cycle at import

        body = self.wire_body()
        for index, entry in enumerate(body["metadata"].get("managedFields", ())):
            if "fieldsV1" in entry:
                try:
                    entry["fieldsV1"] = msgspec.json.decode(entry["fieldsV1"])
                except RecursionError:  # deeper than Python's recursion limit lets msgspec go
                    raise DecodeError(
                        f"metadata.managedFields[{index}].fieldsV1 is nested too deeply to "
                        "become Python objects; encode() still writes it"
                    ) from None
                except msgspec.DecodeError as err:  # a number no float holds (1e400), kept by Go
                    raise DecodeError(
                        f"metadata.managedFields[{index}].fieldsV1 cannot become Python "
                        f"objects ({err}); encode() still writes it"
                    ) from None
        return body

    def wire_body(self) -> dict[str, Any]:
        """:meth:`to_dict`, but with each ``fieldsV1`` left as its raw JSON text."""
        try:
            raw: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self))
        except UnicodeEncodeError:
            # A string with lone surrogates (a name read from a non-UTF-8 file
            # system path): keep it, and let encode() replace it as Go does.
            raw = _as_lists(msgspec.to_builtins(self))
        for key in self._NOT_WIRE:
            raw.pop(key, None)
        return {"metadata": raw.pop("metadata", {}), **raw}

    def devices(self) -> Iterator[tuple[DeviceMetadataRequest, Device]]:
        """Every ``(request, device)`` pair, in request then device order."""
        for request in self.requests:
            for device in request.devices:
                yield request, device

    def request(self, name: str) -> DeviceMetadataRequest | None:
        """The request named ``name`` (exact match, subrequest included), or ``None``."""
        for request in self.requests:
            if request.name == name:
                return request
        return None


class MetadataSource(msgspec.Struct, frozen=True, gc=False, repr_omit_defaults=True):
    """One file that went into a merged read, with the identity Go throws away."""

    #: The file that was read.
    path: str
    #: The driver the file belongs to (from its name).
    driver: str
    #: The apiVersion the file's object was decoded from.
    api_version: str
    #: The file's ``metadata.generation``.
    generation: int
    #: The claim UID the file names (``metadata.uid``).
    claim_uid: str
    #: The claim name the file names (``metadata.name``).
    claim_name: str
    #: The claim namespace the file names (``metadata.namespace``).
    claim_namespace: str


class MergedDeviceMetadata(DeviceMetadata, tag="DeviceMetadata"):
    """The metadata of one request merged across its drivers' files.

    Its wire form (:meth:`to_dict`) is Go's merged object: no object metadata, the
    first non-null ``podClaimName``, requests of the same name concatenated in file
    order. Unlike Go it also keeps :attr:`sources`, one per file in merge order.
    ``api_version`` is the version every file was decoded from, or ``""`` when
    they differ.
    """

    #: One entry per file that went into the merge, in merge order.
    sources: tuple[MetadataSource, ...] = ()

    _NOT_WIRE: ClassVar[tuple[str, ...]] = ("kind", "apiVersion", "sources")

    def _agreed(self, field: str) -> str | None:
        values = {getattr(source, field) for source in self.sources}
        return values.pop() if len(values) == 1 else None

    @property
    def claim_uid(self) -> str | None:
        """The claim UID every file agrees on, or ``None`` when they disagree (or none)."""
        return self._agreed("claim_uid")

    @property
    def claim_name(self) -> str | None:
        """The claim name every file agrees on, or ``None`` when they disagree (or none)."""
        return self._agreed("claim_name")

    @property
    def claim_namespace(self) -> str | None:
        """The claim namespace every file agrees on, or ``None`` when they disagree."""
        return self._agreed("claim_namespace")

    @property
    def generations(self) -> dict[str, int]:
        """Each driver's ``metadata.generation``, in merge order.

        A merged object has no object metadata of its own (``metadata`` is empty, as
        in Go); this is where each file's generation went.

        >>> import dra_metadata as dm
        >>> dm.read_resource_claim("nic", "eth", root="examples/dra-device-attributes").generations
        {'sriov.example.com': 2}
        """
        return {source.driver: source.generation for source in self.sources}

    def disagreement(self) -> str | None:
        """What the files disagree on (claim UID, name or namespace), or ``None``.

        >>> MergedDeviceMetadata().disagreement() is None
        True
        """
        differing = [
            label
            for label, field in (
                ("claim UID", "claim_uid"),
                ("claim name", "claim_name"),
                ("namespace", "claim_namespace"),
            )
            if len({getattr(source, field) for source in self.sources}) > 1
        ]
        if not differing:
            return None
        detail = "; ".join(
            f"{source.driver}: {source.claim_namespace}/{source.claim_name} uid={source.claim_uid}"
            for source in self.sources
        )
        return f"the files disagree on the {' and '.join(differing)} ({detail})"

    @property
    def conflicting_sources(self) -> tuple[MetadataSource, ...]:
        """Files whose claim UID differs from the first file's (normally empty).

        A non-empty result means files of different claims (or of a claim that was
        re-created) sit in one request directory: treat the devices with suspicion.
        """
        if not self.sources:
            return ()
        first = self.sources[0].claim_uid
        return tuple(source for source in self.sources if source.claim_uid != first)


def qualified_entry(device: Device, name: str, domain: str, local: str) -> DeviceAttribute | None:
    """The entry of the qualified attribute ``name`` (``domain/local``) of ``device``.

    The key as given, else, in the device's own driver domain, the unqualified
    key: the rule :meth:`Device.find_attribute` follows for a qualified name. It
    takes the name split already, for callers that look the same names up on
    many devices.
    """
    attributes = device.attributes
    found = attributes.get(name)
    if found is None and domain == device.driver:
        found = attributes.get(local)
    return found


def wire_names(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    """The wire names of a model class's fields in Go's order, its tag field (``kind``) first.

    >>> wire_names(NetworkDeviceData)
    ('interfaceName', 'ips', 'hardwareAddress')
    >>> wire_names(DeviceMetadata)
    ('kind', 'apiVersion', 'metadata', 'podClaimName', 'requests')
    """
    names = cls.__struct_encode_fields__  # msgspec.structs.fields() would read the type hints
    tag_field = cls.__struct_config__.tag_field
    return (tag_field, *names) if tag_field else names


#: The network data fields: wire name -> attribute of :class:`NetworkDeviceData`.
NETWORK_FIELDS: "Final[dict[str, str]]" = dict(
    zip(wire_names(NetworkDeviceData), NetworkDeviceData.__struct_fields__, strict=True)
)


def _as_lists(value: Any) -> Any:
    """``value`` with every tuple a list, as a JSON round trip would give it."""
    if isinstance(value, dict):
        return {key: _as_lists(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_as_lists(item) for item in value]
    return value


#: What an attribute can be given as (see :func:`to_attribute`).
AttributeInput: TypeAlias = (
    bool
    | int
    | str
    | VersionValue
    | DeviceAttribute
    | Sequence[bool]
    | Sequence[int]
    | Sequence[str]
    | Sequence[VersionValue]
)

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def to_attribute(value: AttributeInput) -> DeviceAttribute:
    """The :class:`~dra_metadata.DeviceAttribute` for a plain Python value.

    ``bool`` becomes ``bool``, ``int`` ``int``, :class:`~dra_metadata.VersionValue`
    ``version``, ``str`` ``string``; a non-empty list or tuple becomes the list
    form of its items' kind. A ``DeviceAttribute`` is taken as it is.

    The one conversion of plain values: the testing kit's builders and
    :meth:`~dra_metadata.MetadataPublisher.device` both use it. ``TypeError``
    for a value of no attribute kind, ``ValueError`` for an int outside int64
    or an empty list.

    >>> to_attribute(True), to_attribute(3), to_attribute("A100")
    (DeviceAttribute(bool=True), DeviceAttribute(int=3), DeviceAttribute(string='A100'))
    >>> to_attribute([0, 1])
    DeviceAttribute(ints=(0, 1))
    """
    if isinstance(value, DeviceAttribute):
        return value
    if isinstance(value, bool):
        return DeviceAttribute(bool=value)
    if isinstance(value, int):
        return DeviceAttribute(int=_int64(value))
    if isinstance(value, VersionValue):
        return DeviceAttribute(version=str(value))
    if isinstance(value, str):
        return DeviceAttribute(string=value)
    if isinstance(value, (list, tuple)):
        items = tuple(value)
        if not items:
            raise ValueError("an empty list has no kind (Kubernetes treats it as not set)")
        if all(isinstance(item, bool) for item in items):
            return DeviceAttribute(bools=items)
        if all(isinstance(item, int) and not isinstance(item, bool) for item in items):
            return DeviceAttribute(ints=tuple(_int64(item) for item in items))
        if all(isinstance(item, VersionValue) for item in items):
            return DeviceAttribute(versions=tuple(str(item) for item in items))
        if all(isinstance(item, str) and not isinstance(item, VersionValue) for item in items):
            return DeviceAttribute(strings=items)
        kinds = sorted({type(item).__name__ for item in items})
        raise TypeError(f"list attribute items must all be of one kind, got {', '.join(kinds)}")
    raise TypeError(f"cannot make a device attribute of {type(value).__name__}")


def _int64(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"int attribute {value} does not fit in 64 bits")
    return value


DeviceKind = Literal["gpu", "nic", "cpu", "memory", "other"]
#: Every device kind, in the order listings use.
DEVICE_KINDS: "Final[tuple[DeviceKind, ...]]" = ("gpu", "nic", "cpu", "memory", "other")

#: Drivers whose kind is known (see the module docs for the sources).
DRIVER_KINDS: "Final[dict[str, DeviceKind]]" = {
    "gpu.nvidia.com": "gpu",
    "gpu.amd.com": "gpu",
    "gpu.intel.com": "gpu",
    "dra.cpu": "cpu",
    "dra.net": "nic",
    "sriovnetwork.k8snetworkplumbingwg.io": "nic",
    "dra.memory": "memory",
}

_STANDARD: Final = STANDARD_DOMAIN + DOMAIN_SEPARATOR

#: The standard attributes whose meaning the model answers, by local name, each with
#: the names drivers publish for it today, tried in this order after the standard
#: name (sources in the module docs).
STANDARD_ALIASES: "Final[dict[str, tuple[str, ...]]]" = {
    "pciBusID": (
        "gpu.nvidia.com/pcieBusID",
        "sriovnetwork.k8snetworkplumbingwg.io/pciAddress",
        "dra.net/pciAddress",
        "gpu.amd.com/pciAddr",
    ),
    "numaNode": (
        "dra.cpu/numaNodeID",
        "dra.cpu/numaNode",
        "dra.net/numaNode",
        "dra.memory/numaNode",
        "gpu.nvidia.com/numa",
    ),
    "pcieRoot": (),
}
#: Stands for the device's own driver domain in :data:`PCI_BUS_ID_ATTRIBUTES` and
#: :data:`NUMA_ATTRIBUTES`.
_OWN: Final = "{driver}" + DOMAIN_SEPARATOR
#: PCI address attributes, in the order :func:`lookup` tries them for ``pciBusID``.
PCI_BUS_ID_ATTRIBUTES: "Final[tuple[str, ...]]" = (
    _OWN + "pciBusID",
    _STANDARD + "pciBusID",
    *STANDARD_ALIASES["pciBusID"],
)
#: NUMA attributes, in the order :func:`lookup` tries them for ``numaNode``.
NUMA_ATTRIBUTES: "Final[tuple[str, ...]]" = (
    _OWN + "numaNode",
    _STANDARD + "numaNode",
    *STANDARD_ALIASES["numaNode"],
)
#: The standard PCIe root attribute (a string, or a list of them).
PCIE_ROOT_ATTRIBUTE: Final = _STANDARD + "pcieRoot"
#: Names ``get`` and :meth:`Device.require` answer from the model, beside the
#: standard attributes: every NUMA node, every PCIe root.
LIST_QUESTIONS: "Final[dict[str, str]]" = {"numaNodes": "numaNode", "pcieRoots": "pcieRoot"}


def _split(names: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """(name, domain, local) of each name, split as :func:`lookup` splits it."""
    split = []
    for name in names:
        domain, _, local = name.rpartition(DOMAIN_SEPARATOR)
        split.append((name, domain, local))
    return tuple(split)


#: (qualified name, domain, local name) of each alias, split once, by standard name.
_ALIASES: Final = {local: _split(names) for local, names in STANDARD_ALIASES.items()}


def lookup(device: Device, name: str) -> "tuple[str, DeviceAttribute] | None":
    """The attribute ``name`` names on ``device``, with the qualified name it was found as.

    The one rule every door follows (:meth:`Device.attribute`, ``get``, ``wait
    --attribute``, ``has=``, ``where=``, the model's own answers), first match wins:

    1. the key exactly as given;
    2. the same attribute in the driver's domain: ``model`` is ``<driver>/model``
       and ``<driver>/model`` is ``model`` (a ResourceSlice's rule);
    3. for an unqualified name, the Kubernetes standard attribute of that name
       (``pciBusID`` -> ``resource.kubernetes.io/pciBusID``);
    4. for a standard attribute (``pciBusID``, ``numaNode``, ``pcieRoot``,
       unqualified or in the standard domain), the driver's own attribute of that
       name, then the names drivers publish for it today
       (:data:`STANDARD_ALIASES`: NVIDIA's ``pcieBusID``, ``dra.cpu/numaNodeID`` ...).
    """
    attributes = device.attributes
    if not attributes:
        return None
    driver = device.driver
    domain, sep, local = name.rpartition(DOMAIN_SEPARATOR)
    found = attributes.get(name)
    if sep:
        if found is not None:
            return name, found
        if domain == driver:
            found = attributes.get(local)
            return None if found is None else (name, found)
        if domain != STANDARD_DOMAIN or local not in _ALIASES:
            return None
        own = driver + DOMAIN_SEPARATOR + local
        found = attributes.get(own)
        if found is None:
            found = attributes.get(local)
        if found is not None:
            return own, found
    else:
        own = driver + DOMAIN_SEPARATOR + name
        if found is not None:
            return own, found
        found = attributes.get(own)
        if found is not None:
            return own, found
        standard = _STANDARD + name
        found = attributes.get(standard)
        if found is not None:
            return standard, found
    for alias, alias_domain, alias_local in _ALIASES.get(local, ()):
        if alias not in attributes and alias_local not in attributes:
            continue  # the only two keys qualified_entry looks up: neither is there
        found = qualified_entry(device, alias, alias_domain, alias_local)
        if found is not None:
            return alias, found
    return None


def known_names(device: Device) -> "list[str]":
    """What a "did you mean" for an attribute of ``device`` chooses from: its keys, their
    local names, and the standard names :func:`lookup` answers on it."""
    names = dict.fromkeys(device.attributes)
    for key in device.attributes:
        domain, sep, local = key.rpartition(DOMAIN_SEPARATOR)
        if sep and domain in (device.driver, STANDARD_DOMAIN):
            names.setdefault(local)
    for local in STANDARD_ALIASES:
        if lookup(device, local) is not None:
            names.setdefault(local)
            for list_name, standard in LIST_QUESTIONS.items():
                if standard == local:
                    names.setdefault(list_name)
    return list(names)


def standard_name(name: str) -> "str | None":
    """The standard attribute (``numaNode``...) ``name`` asks for, unqualified or in the
    standard domain (``numaNodes`` asks ``numaNode``); ``None`` for any other name."""
    domain, sep, local = name.rpartition(DOMAIN_SEPARATOR)
    if sep and domain != STANDARD_DOMAIN:
        return None
    local = LIST_QUESTIONS.get(local, local)
    return local if local in _ALIASES else None


def standard_asked(name: str, standard: str) -> str:
    """The attribute name a lookup of ``name`` asks for, ``standard`` being what
    :func:`standard_name` made of it: the list question's attribute, in the domain
    given (``resource.kubernetes.io/numaNodes`` asks ``resource.kubernetes.io/numaNode``)."""
    domain = name.rpartition(DOMAIN_SEPARATOR)[0]
    return f"{domain}{DOMAIN_SEPARATOR}{standard}" if domain else standard


def standard_values(device: Device, name: str) -> "tuple[object, ...] | None":
    """The model's answer to standard attribute ``name`` as a set of values, for
    matching (every NUMA node, the PCI address in its standard form, every root);
    ``None`` when ``name`` is no standard attribute."""
    standard = standard_name(name)
    if standard is None:
        return None
    asked = standard_asked(name, standard)
    if standard == _NUMA_NODE:
        return numa_of(device, asked).nodes
    if standard == "pciBusID":
        pci = pci_address_of(device, asked)
        return () if pci is None or pci.value is None else (pci.value,)
    return device.pcie_roots


def has_answer(device: Device, name: str) -> bool:
    """Whether ``device`` has attribute ``name``: what ``inv.devices(has=)``,
    ``has_attribute()`` and ``wait --attribute`` ask. A standard attribute counts by
    the model's answer, the one ``get`` prints (:func:`standard_values`: a negative
    ``numaNode`` is no node, a ``pciBusID`` that is no PCI address is none,
    ``numaNodes`` asks for the list); any other name by :meth:`Device.attribute`.

    >>> from dra_metadata import Device, DeviceAttribute as A
    >>> cpu = Device("dra.cpu", "p", "c", {"numaNode": A(int=-1), "cpus": A(ints=(4, 5))})
    >>> has_answer(cpu, "cpus"), has_answer(cpu, "numaNode"), cpu.attribute("numaNode")
    (True, False, -1)
    """
    values = standard_values(device, name)
    return device.attribute(name) is not None if values is None else bool(values)


_ATTRIBUTE_KINDS: "Final[tuple[tuple[str, DeviceKind], ...]]" = (
    ("dra.net/ifName", "nic"),
    ("dra.cpu/cpuID", "cpu"),
)

#: The standard form, ``[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]``, by position: the
#: separators, then the hex digits (compiling the pattern cost more than env's
#: whole output of the sample tree).
_NORMAL_SEPARATORS: Final = ((4, ":"), (7, ":"), (10, "."))
_NORMAL_HEX: Final = (0, 1, 2, 3, 5, 6, 8, 9)
_HEX_DIGITS: Final = frozenset("0123456789abcdef")
# Compiled on first use (_compiled), for what is not in the standard form: a command
# that never meets such an address does not pay for it.
_PCI: Final = r"(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])"


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled for ASCII text, on first use (faster than re's cache after)."""
    return re.compile(pattern, re.ASCII)


def normal_pci_address(text: str) -> str | None:
    """``text`` as a standard PCI address (``0000:18:00.0``), or ``None`` if it is none.

    Takes NVML's eight-digit domain, upper case and a missing domain (``0000``).

    >>> normal_pci_address("00000000:3B:00.0"), normal_pci_address("af:00.1")
    ('0000:3b:00.0', '0000:af:00.1')
    >>> normal_pci_address("../../.."), normal_pci_address("0000:3b:00.0,0000:3c:00.0")
    (None, None)
    """
    if (
        len(text) == 12
        and all(text[i] == separator for i, separator in _NORMAL_SEPARATORS)
        and all(text[i] in _HEX_DIGITS for i in _NORMAL_HEX)
        and "0" <= text[11] <= "7"
    ):
        return text
    found = _compiled(_PCI).fullmatch(text)
    if found is None:
        return None
    domain, bus, slot, function = found.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(slot, 16):02x}.{function}"


def is_pcie_root(text: str) -> bool:
    """Whether ``text`` is a PCIe root in the standard form: ``pci``, a 4-8 digit
    lower-case hex domain, ``:``, a 2-digit bus (``pci0000:3a``, as Linux names it)."""
    domain, colon, bus = text[3:].partition(":")
    return (
        text[:3] == "pci"
        and colon == ":"
        and 4 <= len(domain) <= 8
        and len(bus) == 2
        and _HEX_DIGITS.issuperset(domain)
        and _HEX_DIGITS.issuperset(bus)
    )


class PciAddress(msgspec.Struct, frozen=True, gc=False):
    """A device's PCI address: normalised ``value`` (``None``: not an address), its attribute."""

    #: The standard form, or ``None`` when the attribute holds no PCI address.
    value: str | None
    #: The attribute it came from (``gpu.nvidia.com/pcieBusID``).
    source: str
    #: The attribute's value as written.
    raw: AttributeValue


def pci_address_of(device: Device, name: str = "pciBusID") -> PciAddress | None:
    """The device's PCI address attribute (:func:`lookup` of ``name``: ``pciBusID``, or
    the standard-first ``resource.kubernetes.io/pciBusID``), normalised; ``None``
    when it has none."""
    found = lookup(device, name)
    if found is None:
        return None
    source, entry = found
    raw = entry.value
    if raw is None:
        return None
    value = normal_pci_address(raw) if isinstance(raw, str) else None
    return PciAddress(value, source, raw)


def int_values(value: "AttributeValue | None") -> tuple[int, ...]:
    """An int or list-of-ints attribute value as a tuple, each number once; else ``()``."""
    if isinstance(value, bool) or value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    if isinstance(value, tuple) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(dict.fromkeys(int(v) for v in value))
    return ()


class NumaNodes(msgspec.Struct, frozen=True, gc=False):
    """A device's NUMA nodes, the attribute they came from, and every attribute's say.

    KEP-6072: a list-valued ``numaNode`` starts with the device's physical NUMA
    node; the rest are the same-socket nodes at the minimum distance. A negative
    node means "no NUMA affinity" (Linux's ``-1``): not a node, so the attribute
    says nothing of where the device is (:attr:`unknown` names it).
    """

    #: The nodes of the first NUMA attribute with a node, in the order published
    #: (the physical node first; negative numbers left out).
    nodes: tuple[int, ...]
    #: That attribute's name, or ``None`` when the device has none.
    source: str | None
    #: ``(attribute, nodes)`` of every NUMA attribute with a node, in lookup order.
    sources: tuple[tuple[str, tuple[int, ...]], ...]
    #: NUMA attributes that say "no NUMA affinity" (a negative node), in lookup order.
    unknown: tuple[str, ...] = ()

    @property
    def physical(self) -> "int | None":
        """The device's physical NUMA node: the scalar, or the list's first element."""
        return self.nodes[0] if self.nodes else None

    @property
    def disagree(self) -> bool:
        """Whether two attributes name different physical nodes, or two lists different sets.

        A scalar is compared with a list's first element only: ``numaNodeID: 1``
        and ``numaNode: [1, 0]`` agree (what dra-driver-cpu publishes).
        """
        sources = self.sources
        if len(sources) < 2:
            return False
        if len({nodes[0] for _, nodes in sources}) > 1:
            return True
        return len({frozenset(nodes) for _, nodes in sources if len(nodes) > 1}) > 1


_NO_NUMA: Final = NumaNodes((), None, ())
_NUMA_NODE: Final = "numaNode"
_STD_NUMA: Final = _STANDARD + _NUMA_NODE


def numa_of(device: Device, name: str = _NUMA_NODE) -> NumaNodes:
    """The device's NUMA nodes, read in :func:`lookup`'s order for ``name`` (``numaNode``,
    the driver's own first; or ``resource.kubernetes.io/numaNode``, the standard first).

    >>> from dra_metadata import Device, DeviceAttribute as A
    >>> cpu = Device("dra.cpu", "p", "c", {"resource.kubernetes.io/numaNode": A(ints=(1, 0))})
    >>> numa_of(cpu).nodes, numa_of(cpu).physical
    ((1, 0), 1)
    """
    attributes = device.attributes
    if not attributes:
        return _NO_NUMA
    driver = device.driver
    own = driver + DOMAIN_SEPARATOR + _NUMA_NODE
    found: list[tuple[str, DeviceAttribute]] = []
    entry = attributes.get(own)
    if entry is None:
        entry = attributes.get(_NUMA_NODE)  # the driver's own, unqualified
    if entry is not None:
        found.append((own, entry))
    if own != _STD_NUMA and (entry := attributes.get(_STD_NUMA)) is not None:
        if name == _STD_NUMA:  # the key as given first
            found.insert(0, (_STD_NUMA, entry))
        else:
            found.append((_STD_NUMA, entry))
    for alias, domain, local in _ALIASES[_NUMA_NODE]:
        if alias == own or (alias not in attributes and local not in attributes):
            continue  # read already, or neither key qualified_entry looks up is there
        entry = qualified_entry(device, alias, domain, local)
        if entry is not None:
            found.append((alias, entry))
    if not found:
        return _NO_NUMA
    sources: list[tuple[str, tuple[int, ...]]] = []
    unknown: list[str] = []
    for name, entry in found:
        nodes = int_values(entry.value)
        if not nodes:
            continue
        if nodes[0] < 0:
            unknown.append(name)
            continue
        if min(nodes) < 0:
            nodes = tuple(node for node in nodes if node >= 0)
        sources.append((name, nodes))
    if not sources:
        return NumaNodes((), None, (), tuple(unknown)) if unknown else _NO_NUMA
    return NumaNodes(sources[0][1], sources[0][0], tuple(sources), tuple(unknown))


def pcie_roots_of(device: Device) -> tuple[str, ...]:
    """The standard ``pcieRoot`` as a tuple (a string, or a list kept whole).

    Empty when the attribute is absent or not in the standard form
    (:func:`standard_problem` says why).
    """
    found = device.attributes.get(PCIE_ROOT_ATTRIBUTE)
    value = None if found is None else found.value
    if isinstance(value, str):
        return (str(value),) if value and is_pcie_root(value) else ()
    if isinstance(value, tuple) and all(isinstance(v, str) and is_pcie_root(v) for v in value):
        return tuple(dict.fromkeys(str(v) for v in value))
    return ()


def standard_problem(device: Device, name: str) -> "str | None":
    """Why the device's standard ``name`` (``pciBusID``, ``pcieRoot``, or qualified in
    the standard domain) is not in its standard form, or ``None``: the one message
    (:func:`malformed`) of every door that prints the standard form (``get``, ``env``).
    """
    raw: AttributeValue | None
    standard = standard_name(name)
    if standard == "pciBusID":
        pci = pci_address_of(device, name)
        if pci is None or pci.value is not None:
            return None
        return malformed(device, pci.source, pci.raw, standard)
    if standard == "pcieRoot":
        found = device.attributes.get(PCIE_ROOT_ATTRIBUTE)
        raw = None if found is None else found.value
        if raw is None or pcie_roots_of(device):
            return None
        return malformed(device, PCIE_ROOT_ATTRIBUTE, raw, standard)
    return None


#: What each standard attribute must be, and its standard form.
_STANDARD_FORMS: Final = {
    "pciBusID": ("a PCI address in any form", "0000:3b:00.0"),
    "pcieRoot": ("a PCIe root", "pci0000:3a"),
}


def no_affinity(source: str) -> str:
    """The one text for NUMA attribute ``source`` holding a negative node (KEP-6072)."""
    return f"{source} is negative: no NUMA affinity, so no NUMA node is known (KEP-6072)"


def malformed(device: Device, source: str, raw: object, standard: str) -> str:
    """The one message for attribute ``source`` of ``device`` holding ``raw``, which is
    not ``standard`` (``pciBusID``, ``pcieRoot``) in any form (see :func:`standard_problem`)."""
    what, form = _STANDARD_FORMS[standard]
    return (
        f"device {device.driver}/{device.pool}/{device.name}: {source} holds {raw!r}, "
        f"which is not {what} (standard form: {form})"
    )


def intersect(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Whether two lists share an element: alignment as KEP-6072 and KEP-5491 define it.

    >>> intersect(("pci0000:17", "pci0000:3a"), ("pci0000:3a",)), intersect((0,), (1,))
    (True, False)
    """
    if len(a) > len(b):
        a, b = b, a
    return bool(a) and not set(a).isdisjoint(b)


def device_kind(device: Device) -> DeviceKind:
    """The device's kind by the rules of the module docs."""
    if device.network_data is not None:
        return "nic"
    known = DRIVER_KINDS.get(device.driver)
    if known is not None:
        return known
    if "gpu" in device.driver.split("."):
        return "gpu"
    for name, kind in _ATTRIBUTE_KINDS:
        if device.find_attribute(name) is not None:
            return kind
    if isinstance(device.attribute("uuid"), str) and isinstance(
        device.attribute("productName"), str
    ):
        return "gpu"
    return "other"
