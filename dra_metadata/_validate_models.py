"""The Go reference's v1.37 validation rules as pydantic models of the wire form.

This is validation's exact path: :func:`dra_metadata.validate` comes here only for
an object that its acceptor (:mod:`dra_metadata._validate`) fails, so pydantic
loads only then, or when :mod:`dra_metadata._schema` makes the JSON Schemas.

Each model mirrors one Go type of ``metadata.resource.k8s.io`` (every API version
of :mod:`._versions` is the same apart from ``apiVersion``) and checks its own fields in an
"after" model validator. A rule violation never raises: the model keeps the
errors it found, with paths relative to itself (``strings[1]``, ``operation``, or
``""`` for the object itself), and a parent takes over its children's errors
under their prefix (``requests[0].devices[1].attributes[model]``). The order is
the Go reference's: fields in struct order, list elements by index.

Only what Go checks is checked: attribute keys, scalar string and
version lengths, semver, IP and MAC syntax, names, UIDs and labels are not.
In the models pydantic enforces nothing but the JSON types, which a typed decode
guarantees anyway; the limits it could enforce are attached to the models as JSON
Schema keywords only (see :mod:`dra_metadata._schema`), so that the schema states
the same rules this module applies.

The models accept ``null`` wherever Go's decoder does and read it as Go does (an
absent pointer, an empty list or map; a ``null`` attribute value is an attribute
with no member), and they ignore unknown keys. They are built on first use
(``defer_build``): importing this module defines them only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ._field_error import VALUE_OMITTED, ErrorType, FieldError
from ._formats import (
    DNS1123_LABEL_MAX_BYTES,
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_CASELESS_PATTERN,
    LONG_NAME_CASELESS,
    MANAGED_FIELDS_OPERATIONS,
    MAX_ATTRIBUTES,
    MAX_DRIVER_CHARACTERS,
    MAX_HARDWARE_ADDRESS_BYTES,
    MAX_INTERFACE_NAME_BYTES,
    MAX_IPS,
    MAX_STRINGS_ELEMENT_BYTES,
    RESOURCE_POOL_NAME,
    RESOURCE_POOL_NAME_MAX_BYTES,
    RESOURCE_POOL_NAME_PATTERN,
    SHORT_NAME,
    FormatIssue,
    check_long_name_caseless,
    check_resource_pool_name,
    check_short_name,
    exceeds_bytes,
    is_long_name_caseless,
    is_resource_pool_name,
    is_short_name,
)
from ._model import ATTRIBUTE_KINDS
from ._versions import API_VERSIONS, KIND

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import CoreSchema

__all__ = [
    "Device",
    "DeviceAttribute",
    "DeviceMetadata",
    "DeviceMetadataRequest",
    "ManagedFieldsEntry",
    "NetworkDeviceData",
    "ObjectMeta",
    "OwnerReference",
    "SchemaOnly",
    "WireModel",
    "dedupe",
    "wire_errors",
]


_ATTRIBUTE_MEMBERS: Final = ATTRIBUTE_KINDS
_ATTRIBUTE_LIST_MEMBERS: Final = ("ints", "bools", "strings", "versions")
_MEMBER_LIST_TEXT: Final = ", ".join(f"`{member}`" for member in _ATTRIBUTE_MEMBERS)
_NO_MEMBER_DETAIL: Final = f"must specify one of: {_MEMBER_LIST_TEXT}"
_MANY_MEMBERS_DETAIL: Final = f"must specify exactly one of: {_MEMBER_LIST_TEXT}"
_OPERATIONS_DETAIL: Final = "supported values: " + ", ".join(
    f'"{operation}"' for operation in MANAGED_FIELDS_OPERATIONS
)
_NO_ERRORS: Final[tuple[FieldError, ...]] = ()


# --------------------------------------------------------------------------- errors


def _required(field: str) -> FieldError:
    return FieldError(field, ErrorType.REQUIRED, "")


def _too_long(field: str, limit: int, unit: str, origin: str) -> FieldError:
    detail = f"may not be more than {limit} {unit}"
    return FieldError(field, ErrorType.TOO_LONG, VALUE_OMITTED, detail, origin)


def _too_many(field: str, count: int, limit: int, origin: str) -> FieldError:
    detail = f"must have at most {limit} items"
    return FieldError(field, ErrorType.TOO_MANY, count, detail, origin)


def _formatted(field: str, issues: list[FormatIssue], format_name: str) -> list[FieldError]:
    origin = f"format={format_name}"
    return [
        FieldError(field, issue.type, issue.bad_value, issue.detail, origin) for issue in issues
    ]


def _nest(prefix: str, errors: Iterable[FieldError], out: list[FieldError]) -> None:
    """Append ``errors`` (relative to a child) to ``out`` under the child's ``prefix``."""
    for error in errors:
        relative = error.field
        if not relative:
            path = prefix
        elif relative[0] == "[":
            path = prefix + relative
        else:
            path = f"{prefix}.{relative}"
        out.append(FieldError(path, error.type, error.bad_value, error.detail, error.origin))


def dedupe(errors: Iterable[FieldError]) -> list[FieldError]:
    """Drop errors whose rendered text repeats an earlier one, as Go's aggregate does."""
    seen: set[str] = set()
    kept = []
    for error in errors:
        text = str(error)
        if text not in seen:
            seen.add(text)
            kept.append(error)
    return kept


# --------------------------------------------------------------------------- schema hook


@dataclass(frozen=True, eq=False)
class SchemaOnly:
    """JSON Schema keywords for a type that pydantic must not enforce.

    Validation reports these rules itself, as Go does, instead of raising; the
    keywords only make the generated schema state the same rules.
    """

    keywords: dict[str, Any]

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema.update(self.keywords)
        return schema


def _rule(**keywords: Any) -> SchemaOnly:
    return SchemaOnly(keywords)


# --------------------------------------------------------------------------- models


class WireModel(BaseModel):
    """Base of the wire models: camelCase keys, unknown keys ignored, errors kept."""

    model_config = ConfigDict(
        extra="ignore",
        alias_generator=to_camel,
        hide_input_in_errors=True,
        defer_build=True,
    )

    # Where a model keeps what its validator found. A slot rather than a pydantic
    # private attribute: private attributes cost a Python call per instance.
    __slots__ = ("_found",)

    if TYPE_CHECKING:
        _found: tuple[FieldError, ...] | list[FieldError]

    @property
    def field_errors(self) -> tuple[FieldError, ...]:
        """The errors of this object, in Go's order, paths relative to the object."""
        return tuple(self._found)


# Stores a model's findings in its slot (pydantic's __setattr__ knows no slots).
_keep: Final = object.__setattr__


class OwnerReference(WireModel):
    """An object this one depends on (carried along, not validated)."""

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None
    block_owner_deletion: bool | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        _keep(self, "_found", _NO_ERRORS)
        return self


class ManagedFieldsEntry(WireModel):
    """Server-side-apply bookkeeping. Only `operation` is validated."""

    model_config = ConfigDict(json_schema_extra={"required": ["operation"]})

    manager: str | None = None
    operation: Annotated[str, _rule(enum=list(MANAGED_FIELDS_OPERATIONS))] | None = Field(
        None, description="The operation that produced the entry: `Apply` or `Update`. Required."
    )
    api_version: str | None = None
    time: Annotated[str, _rule(format="date-time")] | None = None
    fields_type: str | None = None
    fields_v1: Any = Field(None, description="The managed fields, as raw JSON. Not validated.")
    subresource: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        operation = self.operation
        if not operation:
            _keep(self, "_found", (_required("operation"),))
        elif operation not in MANAGED_FIELDS_OPERATIONS:
            _keep(
                self,
                "_found",
                (FieldError("operation", ErrorType.NOT_SUPPORTED, operation, _OPERATIONS_DETAIL),),
            )
        else:
            _keep(self, "_found", _NO_ERRORS)
        return self


class ObjectMeta(WireModel):
    """Standard Kubernetes object metadata, copied from the claim. The writer sets name,
    namespace, uid and generation; only `generation` and `managedFields[].operation` are
    validated."""

    name: str | None = Field(None, description="The claim's name. Not validated.")
    generate_name: str | None = None
    namespace: str | None = Field(None, description="The claim's namespace. Not validated.")
    self_link: str | None = None
    uid: str | None = Field(None, description="The claim's UID. Not validated.")
    resource_version: str | None = None
    generation: Annotated[int, _rule(minimum=0)] | None = Field(
        None,
        description="Incremented by the writer on every update of the file. Must not be "
        "negative (0 means unset and is not written).",
    )
    creation_timestamp: Annotated[str, _rule(format="date-time")] | None = Field(
        None, description="RFC 3339 time, UTC, second precision. Not validated."
    )
    deletion_timestamp: Annotated[str, _rule(format="date-time")] | None = Field(
        None, description="RFC 3339 time, UTC, second precision. Not validated."
    )
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = Field(None, description="Labels. Not validated.")
    annotations: dict[str, str] | None = Field(None, description="Annotations. Not validated.")
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[ManagedFieldsEntry] | None = Field(
        None, description="Server-side-apply records; each needs a valid `operation`."
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        errors: list[FieldError] = []
        generation = self.generation
        if generation and generation < 0:
            errors.append(
                FieldError(
                    "generation",
                    ErrorType.INVALID,
                    generation,
                    "must be greater than or equal to 0",
                    "minimum",
                )
            )
        if self.managed_fields:
            for index, entry in enumerate(self.managed_fields):
                if entry._found:
                    _nest(f"managedFields[{index}]", entry._found, errors)
        _keep(self, "_found", errors or _NO_ERRORS)
        return self


class DeviceAttribute(WireModel):
    """One attribute value. Exactly one member must be set; a list member counts as
    set only when it is not empty."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": [member]}
                if member not in _ATTRIBUTE_LIST_MEMBERS
                else {"required": [member], "properties": {member: {"minItems": 1}}}
                for member in _ATTRIBUTE_MEMBERS
            ]
        }
    )

    int_: int | None = Field(None, alias="int", description="A 64-bit integer.")
    bool_: bool | None = Field(None, alias="bool", description="A boolean.")
    string: str | None = Field(
        None,
        description="A string. Documented as at most 64 characters; not enforced here.",
    )
    version: str | None = Field(
        None,
        description="A semantic version (semver.org 2.0.0). Syntax and length are not "
        "enforced here.",
    )
    ints: list[int] | None = Field(None, description="A non-empty list of 64-bit integers.")
    bools: list[bool] | None = Field(None, description="A non-empty list of booleans.")
    strings: list[Annotated[str, _rule(maxLength=MAX_STRINGS_ELEMENT_BYTES)]] | None = Field(
        None,
        description="A non-empty list of strings, each at most 64 bytes (UTF-8).",
    )
    versions: list[str] | None = Field(
        None,
        description="A non-empty list of semantic versions (not checked here).",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        given = self.__pydantic_fields_set__
        if len(given) == 1:
            # The usual attribute: one key. Valid unless it is null, an empty list,
            # or strings (whose elements have a limit of their own).
            for member in given:
                value = self.__dict__[member]
                if value is not None and value != [] and member != "strings":
                    _keep(self, "_found", _NO_ERRORS)
                    return self
        scalars = (self.int_, self.bool_, self.string, self.version)
        lists = (self.ints, self.bools, self.strings, self.versions)
        # A scalar is set when present (even 0, false or ""); a list when not empty.
        count = 8 - scalars.count(None) - lists.count(None) - lists.count([])
        strings = self.strings
        errors: list[FieldError] = []
        if count == 0:
            errors.append(FieldError("", ErrorType.INVALID, "", _NO_MEMBER_DETAIL, "union"))
        elif count > 1:
            present = (*(value is not None for value in scalars), *(bool(value) for value in lists))
            names = ", ".join(
                name for name, is_set in zip(_ATTRIBUTE_MEMBERS, present, strict=True) if is_set
            )
            errors.append(
                FieldError("", ErrorType.INVALID, f"{{{names}}}", _MANY_MEMBERS_DETAIL, "union")
            )
        if strings:
            # Checked whether or not the union rule held, as Go does.
            for index, element in enumerate(strings):
                if exceeds_bytes(element, MAX_STRINGS_ELEMENT_BYTES):
                    errors.append(
                        _too_long(
                            f"strings[{index}]", MAX_STRINGS_ELEMENT_BYTES, "bytes", "maxBytes"
                        )
                    )
        _keep(self, "_found", errors or _NO_ERRORS)
        return self


class NetworkDeviceData(WireModel):
    """Network configuration of a device, as the driver reported it."""

    interface_name: Annotated[str, _rule(maxLength=MAX_INTERFACE_NAME_BYTES)] = Field(
        "",
        description="The interface name inside the container, at most 256 bytes (UTF-8).",
    )
    ips: Annotated[list[str], _rule(maxItems=MAX_IPS, uniqueItems=True)] | None = Field(
        None,
        description="The device's IP addresses, in CIDR notation by convention (not "
        "checked). At most 16, no duplicates.",
    )
    hardware_address: Annotated[str, _rule(maxLength=MAX_HARDWARE_ADDRESS_BYTES)] = Field(
        "",
        description="The MAC address (or other hardware address), at most 128 bytes (UTF-8). "
        "Syntax is not checked.",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        errors: list[FieldError] = []
        if exceeds_bytes(self.interface_name, MAX_INTERFACE_NAME_BYTES):
            errors.append(_too_long("interfaceName", MAX_INTERFACE_NAME_BYTES, "bytes", "maxBytes"))
        ips = self.ips
        if ips:
            if len(ips) > MAX_IPS:
                # Go stops here: no duplicate check on an over-long list.
                errors.append(_too_many("ips", len(ips), MAX_IPS, "maxItems"))
            elif len(set(ips)) != len(ips):
                seen: set[str] = set()
                for index, ip in enumerate(ips):
                    if ip in seen:
                        errors.append(FieldError(f"ips[{index}]", ErrorType.DUPLICATE, ip))
                    else:
                        seen.add(ip)
        if exceeds_bytes(self.hardware_address, MAX_HARDWARE_ADDRESS_BYTES):
            errors.append(
                _too_long("hardwareAddress", MAX_HARDWARE_ADDRESS_BYTES, "bytes", "maxBytes")
            )
        _keep(self, "_found", errors or _NO_ERRORS)
        return self


class Device(WireModel):
    """One allocated device, identified by driver, pool and name."""

    model_config = ConfigDict(json_schema_extra={"required": ["driver", "pool", "name"]})

    driver: Annotated[
        str,
        _rule(
            minLength=1, maxLength=MAX_DRIVER_CHARACTERS, pattern=DNS1123_SUBDOMAIN_CASELESS_PATTERN
        ),
    ] = Field(
        "",
        description="The DRA driver's name: a DNS subdomain (letters of either case), at "
        "most 63 characters. Required.",
    )
    pool: Annotated[
        str,
        _rule(
            minLength=1, maxLength=RESOURCE_POOL_NAME_MAX_BYTES, pattern=RESOURCE_POOL_NAME_PATTERN
        ),
    ] = Field(
        "",
        description="The resource pool: one or more lower-case DNS subdomains separated by "
        "`/`, at most 253 bytes in all. Required.",
    )
    name: Annotated[
        str, _rule(minLength=1, maxLength=DNS1123_LABEL_MAX_BYTES, pattern=DNS1123_LABEL_PATTERN)
    ] = Field(
        "",
        description="The device's name within its pool: a DNS label (lower case, at most 63 "
        "characters). Required.",
    )
    attributes: (
        Annotated[dict[str, DeviceAttribute | None], _rule(maxProperties=MAX_ATTRIBUTES)] | None
    ) = Field(
        None,
        description="Device attributes by qualified name, at most 32. Keys are not validated.",
    )
    network_data: NetworkDeviceData | None = Field(
        None, description="Network data, for network devices."
    )

    def _identity_errors(self) -> list[FieldError]:
        errors: list[FieldError] = []
        driver = self.driver
        if not driver:
            errors.append(_required("driver"))
        else:
            errors.extend(
                _formatted("driver", check_long_name_caseless(driver), LONG_NAME_CASELESS)
            )
            if len(driver) > MAX_DRIVER_CHARACTERS:
                errors.append(_too_long("driver", MAX_DRIVER_CHARACTERS, "characters", "maxLength"))
        if not self.pool:
            errors.append(_required("pool"))
        else:
            errors.extend(
                _formatted("pool", check_resource_pool_name(self.pool), RESOURCE_POOL_NAME)
            )
        if not self.name:
            errors.append(_required("name"))
        else:
            errors.extend(_formatted("name", check_short_name(self.name), SHORT_NAME))
        return errors

    @model_validator(mode="after")
    def _check(self) -> Self:
        errors: list[FieldError] = []
        driver = self.driver
        if not (
            len(driver) <= MAX_DRIVER_CHARACTERS
            and is_long_name_caseless(driver)
            and is_resource_pool_name(self.pool)
            and is_short_name(self.name)
        ):
            # Something is wrong with driver, pool or name: spell out what.
            errors.extend(self._identity_errors())
        attributes = self.attributes
        if attributes:
            if len(attributes) > MAX_ATTRIBUTES:
                # Go stops here: no attribute is looked at.
                errors.append(
                    _too_many("attributes", len(attributes), MAX_ATTRIBUTES, "maxProperties")
                )
            else:
                for key, attribute in attributes.items():
                    found = _NULL_ATTRIBUTE_ERRORS if attribute is None else attribute._found
                    if found:
                        _nest(f"attributes[{key}]", found, errors)
        network_data = self.network_data
        if network_data is not None and network_data._found:
            _nest("networkData", network_data._found, errors)
        _keep(self, "_found", errors or _NO_ERRORS)
        return self


class DeviceMetadataRequest(WireModel):
    """The devices allocated for one request of the claim."""

    model_config = ConfigDict(json_schema_extra={"required": ["name"]})

    name: Annotated[str, _rule(minLength=1)] = Field(
        "",
        description="The request's name as the claim spells it, `<request>` or "
        "`<request>/<subrequest>`. Required; no other rule.",
    )
    devices: list[Device] | None = Field(None, description="The devices allocated for it.")

    @model_validator(mode="after")
    def _check(self) -> Self:
        errors: list[FieldError] = []
        if not self.name:
            errors.append(_required("name"))
        if self.devices:
            for index, device in enumerate(self.devices):
                if device._found:
                    _nest(f"devices[{index}]", device._found, errors)
        _keep(self, "_found", errors or _NO_ERRORS)
        return self


class DeviceMetadata(WireModel):
    """Device metadata that a DRA driver writes for one claim's request, as a container
    reads it under /var/run/kubernetes.io/dra-device-attributes."""

    model_config = ConfigDict(json_schema_extra={"required": ["kind", "apiVersion"]})

    kind: Annotated[str, _rule(const=KIND)] | None = Field(
        None, description="Always `DeviceMetadata`."
    )
    api_version: Annotated[str, _rule(enum=list(API_VERSIONS))] | None = Field(
        None, description="The API version of this entry."
    )
    metadata: ObjectMeta | None = Field(
        None,
        description="Standard object metadata of the claim (name, namespace, uid, generation).",
    )
    pod_claim_name: (
        Annotated[str, _rule(maxLength=DNS1123_LABEL_MAX_BYTES, pattern=DNS1123_LABEL_PATTERN)]
        | None
    ) = Field(
        None,
        description="The pod's name for the claim, for claims made from a "
        "ResourceClaimTemplate: a DNS label. Validated when present, even when empty.",
    )
    requests: list[DeviceMetadataRequest] | None = Field(
        None, description="One entry per request of the claim that this driver served."
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        errors: list[FieldError] = []
        metadata = self.metadata
        if metadata is not None and metadata._found:
            _nest("metadata", metadata._found, errors)
        if self.pod_claim_name is not None:
            issues = check_short_name(self.pod_claim_name)
            if issues:
                errors.extend(_formatted("podClaimName", issues, SHORT_NAME))
        if self.requests:
            for index, request in enumerate(self.requests):
                if request._found:
                    _nest(f"requests[{index}]", request._found, errors)
        _keep(self, "_found", errors or _NO_ERRORS)
        return self


# A JSON null attribute value decodes to an empty DeviceAttribute in Go.
_NULL_ATTRIBUTE_ERRORS: Final = (FieldError("", ErrorType.INVALID, "", _NO_MEMBER_DETAIL, "union"),)


def wire_errors(obj: dict[str, Any]) -> list[FieldError]:
    """Every validation error of a wire-form object, found by the models in Go's order.

    Errors whose text repeats an earlier one are dropped. A value of the wrong JSON
    type raises ``TypeError``.
    """
    try:
        model = DeviceMetadata.model_validate(obj)
    except ValidationError as exc:
        raise TypeError(f"not the wire form of a DeviceMetadata: {exc}") from exc
    return dedupe(model._found)
