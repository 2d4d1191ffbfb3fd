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

The values these objects carry (:class:`DeviceAttribute`, network data) are in
:mod:`._values`, below this module; what the standard attributes mean (the PCI
address, NUMA nodes, PCIe roots and kind of a device, and the answer every door
reads) is in :mod:`._standard`, which :class:`Device` asks.
"""

from collections.abc import Iterator
from typing import Any, ClassVar

import msgspec
import msgspec.structs

from ._errors import AttributeNotFoundError, DecodeError, MalformedAttributeError
from ._standard import (
    QUESTIONS,
    DeviceKind,
    device_kind,
    known_names,
    lookup,
    numa_of,
    pci_address_of,
    pcie_roots_of,
    standard_answer,
)
from ._values import (
    ATTRIBUTE_KINDS,
    DOMAIN_SEPARATOR,
    NETWORK_FIELDS,
    STANDARD_DOMAIN,
    STRUCT_OPTIONS,
    AttributeInput,
    AttributeKind,
    AttributeValue,
    DeviceAttribute,
    Int64,
    NetworkDeviceData,
    VersionValue,
    to_attribute,
)
from ._versions import V1ALPHA1, V1BETA1

__all__ = [
    "ATTRIBUTE_KINDS",
    "DOMAIN_SEPARATOR",
    "NETWORK_FIELDS",
    "STANDARD_DOMAIN",
    "V1ALPHA1",
    "V1BETA1",
    "AttributeInput",
    "AttributeKind",
    "AttributeValue",
    "Device",
    "DeviceAttribute",
    "DeviceMetadata",
    "DeviceMetadataRequest",
    "ManagedFieldsEntry",
    "MergedDeviceMetadata",
    "MetadataSource",
    "NetworkDeviceData",
    "ObjectMeta",
    "OwnerReference",
    "VersionValue",
    "to_attribute",
]


class OwnerReference(msgspec.Struct, rename="camel", omit_defaults=True, **STRUCT_OPTIONS):
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


class ManagedFieldsEntry(msgspec.Struct, rename="camel", omit_defaults=True, **STRUCT_OPTIONS):
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


class ObjectMeta(msgspec.Struct, rename="camel", omit_defaults=True, **STRUCT_OPTIONS):
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
    generation: Int64 = 0
    #: ``creationTimestamp`` (RFC 3339), or ``None``.
    creation_timestamp: str | None = None
    #: ``deletionTimestamp`` (RFC 3339), or ``None``.
    deletion_timestamp: str | None = None
    #: ``deletionGracePeriodSeconds``, or ``None``.
    deletion_grace_period_seconds: Int64 | None = None
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


class Device(msgspec.Struct, rename="camel", omit_defaults=True, **STRUCT_OPTIONS):
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

        Names resolve as :meth:`find_attribute` says. A standard question
        (``pciBusID``, ``numaNode``, ``numaNodes``, ``pcieRoot``, ``pcieRoots``)
        gets the standard's answer, the one every door gives: the PCI address in the
        standard form, the physical NUMA node, ``default`` for a ``-1`` or for a
        value the standard does not define; :meth:`find_attribute` gives the entry
        as written. :meth:`require` says why there is no value.
        """
        if name in QUESTIONS:
            found = standard_answer(self, name)
            if found is not None:
                return default if found.value is None else found.value
        entry = self.find_attribute(name)
        if entry is None:
            return default
        value = entry.value
        return default if value is None else value

    def require(self, name: str) -> AttributeValue:
        """The value of attribute ``name`` (as :meth:`attribute` gives it), or an error.

        :class:`~dra_metadata.AttributeNotFoundError` when the device has none:
        the message names the device and the attribute, and why there is no value
        (``-1``: no NUMA affinity) or the closest names the device has ("did you
        mean 'uuid'?"); :class:`~dra_metadata.MalformedAttributeError` when a
        standard attribute holds what the standard does not define.

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
        found = standard_answer(self, name)  # None: no standard question
        if found is None:
            value = self.attribute(name)
            if value is not None:
                return value
        elif found.value is not None:
            return found.value
        from ._text import did_you_mean  # on the way to an error only

        if found is not None and found.malformed:
            raise MalformedAttributeError(found.why)
        where = f"device {self.driver}/{self.pool}/{self.name}"
        why = f": {found.why}" if found is not None and found.why else ""
        raise AttributeNotFoundError(
            f"{where} has no attribute {name!r}" + (why or did_you_mean(name, known_names(self))),
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


class DeviceMetadataRequest(msgspec.Struct, omit_defaults=True, **STRUCT_OPTIONS):
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
    **STRUCT_OPTIONS,
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


def _as_lists(value: Any) -> Any:
    """``value`` with every tuple a list, as a JSON round trip would give it."""
    if isinstance(value, dict):
        return {key: _as_lists(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_as_lists(item) for item in value]
    return value


#: What an attribute can be given as (see :func:`to_attribute`).
