"""A device's values as the wire carries them: attributes and network data.

The bottom of the model: :class:`DeviceAttribute` (one attribute, exactly one
member set), :class:`VersionValue`, :class:`NetworkDeviceData` and the one
conversion of plain Python values (:func:`to_attribute`). The objects that hold
them are in :mod:`._model`; what the standard attributes among them mean is in
:mod:`._standard`.

Annotations are real types, not strings, for the reason :mod:`._model` gives.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Final, Literal, TypeAlias

import msgspec

if TYPE_CHECKING:
    import semver

__all__ = [
    "ATTRIBUTE_KINDS",
    "DOMAIN_SEPARATOR",
    "NETWORK_FIELDS",
    "STANDARD_DOMAIN",
    "STRUCT_OPTIONS",
    "AttributeInput",
    "AttributeKind",
    "AttributeValue",
    "DeviceAttribute",
    "Int64",
    "NetworkDeviceData",
    "VersionValue",
    "int_values",
    "to_attribute",
    "wire_names",
]

STANDARD_DOMAIN: Final = "resource.kubernetes.io"
#: Separates an attribute's domain from its local name.
DOMAIN_SEPARATOR: Final = "/"

#: A Go ``int64``: msgspec refuses what does not fit.
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
# Aliases keep the attribute names ``int``/``bool`` free for DeviceAttribute's fields.
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
        # semver: only when a version is parsed
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

#: The options every wire type of the model shares (frozen, strict, compact repr).
STRUCT_OPTIONS: Final = {
    "frozen": True,
    "gc": False,
    "forbid_unknown_fields": True,
    "repr_omit_defaults": True,
}


class DeviceAttribute(msgspec.Struct, omit_defaults=True, **STRUCT_OPTIONS):
    """One attribute value; exactly one member is meant to be set.

    A list member counts as set only when it is non-empty (as in Go). Use
    :attr:`value` to get the value in its own kind.

    >>> DeviceAttribute(string="A100").value
    'A100'
    >>> DeviceAttribute(ints=(0, 1)).kind
    'ints'
    """

    #: An integer value (int64); ``None`` when not set.
    int: Int64 | None = None
    #: A boolean value; ``None`` when not set.
    bool: _Bool | None = None
    #: A string value (at most 64 bytes once validated); ``None`` when not set.
    string: _Str | None = None
    #: A semantic version as written (see :class:`VersionValue`); ``None`` when not set.
    version: _Str | None = None
    #: A list of integers (KEP-5491 list attributes); empty when not set.
    ints: tuple[Int64, ...] = ()
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


class NetworkDeviceData(msgspec.Struct, rename="camel", omit_defaults=True, **STRUCT_OPTIONS):
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


def wire_names(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    """The wire names of a model class's fields in Go's order, its tag field (``kind``) first.

    >>> wire_names(NetworkDeviceData)
    ('interfaceName', 'ips', 'hardwareAddress')
    >>> from dra_metadata import DeviceMetadata
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
