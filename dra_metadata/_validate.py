"""Validation against the Go reference's v1.37 rules: a compiled acceptor first, then the models.

Most objects are valid, and the pydantic models that find Go's errors
(:mod:`dra_metadata._validate_models`) are not the first to see them: an
*acceptor*, one pydantic-core validator compiled on first use, holds the same
field types with every rule as a constraint of the compiled core (patterns,
lengths, literals, one set member per attribute). What it passes has no error and
validation ends there, without Python per field; what it fails goes through the
models, which find Go's errors, paths and texts.

This module needs ``pydantic_core`` only. The models, and with them ``pydantic``,
are imported when the acceptor fails an object, so validating a valid file never
loads pydantic.

This module is imported lazily: ``import dra_metadata`` does not load it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import msgspec
import msgspec.structs
from pydantic_core import SchemaValidator
from pydantic_core import ValidationError as CoreValidationError
from pydantic_core import core_schema as cs

from . import _model as m
from ._field_error import FieldError
from ._formats import (
    DNS1123_LABEL_MAX_BYTES,
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_CASELESS_PATTERN,
    MANAGED_FIELDS_OPERATIONS,
    MAX_ATTRIBUTES,
    MAX_DRIVER_CHARACTERS,
    MAX_HARDWARE_ADDRESS_BYTES,
    MAX_INTERFACE_NAME_BYTES,
    MAX_IPS,
    MAX_STRINGS_ELEMENT_BYTES,
    RESOURCE_POOL_NAME_MAX_BYTES,
    RESOURCE_POOL_NAME_PATTERN,
)
from ._model import ATTRIBUTE_KINDS, DeviceMetadata

if TYPE_CHECKING:
    from pydantic_core import CoreSchema, SchemaValidator

__all__ = ["validate", "validate_wire"]


# --------------------------------------------------------------------------- acceptor

# The acceptor is one pydantic-core validator, compiled on first use and kept,
# that passes only objects on which the models find no error. It types
# every field the models type, with the same pydantic-core validators, and adds
# each rule as a constraint of the compiled core: patterns and lengths for the
# names, ``ge`` for the generation, a literal for the operation, exactly one set
# member per attribute (one single-key variant per member), item and byte limits.
# An object it passes needs no further work: the models would find nothing. An
# object it fails (a broken rule, or a valid but unusual value, such as non-ASCII
# text near a byte limit or an unknown key in an attribute) goes through the
# models, which find Go's errors or raise as before. Failing too much costs time,
# never an answer.

_ASCII_PATTERN: Final = r"^[\x00-\x7F]*$"
_BMP_PATTERN: Final = r"^[\x00-\x{FFFF}]*$"


def _unique(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError("duplicate entries")
    return values


def _wire_fields(
    struct: type[msgspec.Struct], required: Iterable[str] = (), **schemas: CoreSchema
) -> CoreSchema:
    """A typed dict of ``struct``'s wire keys (unknown keys ignored), given by attribute."""

    keys = {field.name: field.encode_name for field in msgspec.structs.fields(struct)}
    tag = struct.__struct_config__.tag_field
    if tag is not None:
        keys[tag] = tag
    if set(schemas) != set(keys):
        raise AssertionError(f"{struct.__name__} has the fields {sorted(keys)}")
    needed = set(required)
    return cs.typed_dict_schema(
        {
            keys[name]: cs.typed_dict_field(schema, required=name in needed)
            for name, schema in schemas.items()
        },
        extra_behavior="ignore",
    )


def _build_acceptor() -> SchemaValidator:
    """The acceptor: the models' field types with every rule as a core constraint."""

    # A container stops at its first bad item: one failure is all the acceptor needs.
    list_of = partial(cs.list_schema, fail_fast=True)
    map_of = partial(cs.dict_schema, fail_fast=True)
    text = cs.str_schema()
    maybe_text = cs.nullable_schema(text)
    maybe_bool = cs.nullable_schema(cs.bool_schema())

    def at_most_bytes(limit: int) -> CoreSchema:
        # Text of at most ``limit`` UTF-8 bytes: ``limit`` characters of one byte
        # (ASCII), ``limit // 3`` of at most three (the BMP), or ``limit // 4`` of any.
        return cs.union_schema(
            [
                cs.str_schema(max_length=limit, pattern=_ASCII_PATTERN),
                cs.str_schema(max_length=limit // 3, pattern=_BMP_PATTERN),
                cs.str_schema(max_length=limit // 4),
            ],
            mode="left_to_right",
        )

    def name(pattern: str, max_length: int) -> CoreSchema:
        # A match is ASCII apart from the two folded runes, which the driver's
        # limit in characters counts as Go does.
        return cs.str_schema(min_length=1, max_length=max_length, pattern=pattern)

    members: dict[str, CoreSchema] = {
        "string": text,
        "int": cs.int_schema(),
        "version": text,
        "bool": cs.bool_schema(),
        "ints": list_of(cs.int_schema(), min_length=1),
        "strings": list_of(at_most_bytes(MAX_STRINGS_ELEMENT_BYTES), min_length=1),
        "bools": list_of(cs.bool_schema(), min_length=1),
        "versions": list_of(text, min_length=1),
    }
    if set(members) != set(ATTRIBUTE_KINDS):
        raise AssertionError(f"the attribute members are {ATTRIBUTE_KINDS}")
    # Exactly one member, set (not null, a list not empty): one variant per member,
    # each with that key alone; the usual members come first.
    attribute = cs.union_schema(
        [
            cs.typed_dict_schema({member: cs.typed_dict_field(schema)}, extra_behavior="forbid")
            for member, schema in members.items()
        ],
        mode="left_to_right",
    )
    network = _wire_fields(
        m.NetworkDeviceData,
        interface_name=at_most_bytes(MAX_INTERFACE_NAME_BYTES),
        ips=cs.nullable_schema(
            cs.no_info_after_validator_function(_unique, list_of(text, max_length=MAX_IPS))
        ),
        hardware_address=at_most_bytes(MAX_HARDWARE_ADDRESS_BYTES),
    )
    device = _wire_fields(
        m.Device,
        ("driver", "pool", "name"),
        driver=name(DNS1123_SUBDOMAIN_CASELESS_PATTERN, MAX_DRIVER_CHARACTERS),
        pool=name(RESOURCE_POOL_NAME_PATTERN, RESOURCE_POOL_NAME_MAX_BYTES),
        name=name(DNS1123_LABEL_PATTERN, DNS1123_LABEL_MAX_BYTES),
        attributes=cs.nullable_schema(map_of(text, attribute, max_length=MAX_ATTRIBUTES)),
        network_data=cs.nullable_schema(network),
    )
    request = _wire_fields(
        m.DeviceMetadataRequest,
        ("name",),
        name=cs.str_schema(min_length=1),
        devices=cs.nullable_schema(list_of(device)),
    )
    owner = _wire_fields(
        m.OwnerReference,
        api_version=maybe_text,
        kind=maybe_text,
        name=maybe_text,
        uid=maybe_text,
        controller=maybe_bool,
        block_owner_deletion=maybe_bool,
    )
    managed = _wire_fields(
        m.ManagedFieldsEntry,
        ("operation",),
        manager=maybe_text,
        # A string first, as the model types it, then one of the values.
        operation=cs.chain_schema([text, cs.literal_schema(list(MANAGED_FIELDS_OPERATIONS))]),
        api_version=maybe_text,
        time=maybe_text,
        fields_type=maybe_text,
        fields_v1=cs.any_schema(),
        subresource=maybe_text,
    )
    text_map = cs.nullable_schema(map_of(text, text))
    meta = _wire_fields(
        m.ObjectMeta,
        name=maybe_text,
        generate_name=maybe_text,
        namespace=maybe_text,
        self_link=maybe_text,
        uid=maybe_text,
        resource_version=maybe_text,
        generation=cs.nullable_schema(cs.int_schema(ge=0)),
        creation_timestamp=maybe_text,
        deletion_timestamp=maybe_text,
        deletion_grace_period_seconds=cs.nullable_schema(cs.int_schema()),
        labels=text_map,
        annotations=text_map,
        owner_references=cs.nullable_schema(list_of(owner)),
        finalizers=cs.nullable_schema(list_of(text)),
        managed_fields=cs.nullable_schema(list_of(managed)),
    )
    top = _wire_fields(
        m.DeviceMetadata,
        kind=maybe_text,
        api_version=maybe_text,
        metadata=cs.nullable_schema(meta),
        pod_claim_name=cs.nullable_schema(
            cs.str_schema(max_length=DNS1123_LABEL_MAX_BYTES, pattern=DNS1123_LABEL_PATTERN)
        ),
        requests=cs.nullable_schema(list_of(request)),
    )
    return SchemaValidator(top)


_acceptor: SchemaValidator | None = None


def _accepts(obj: object, *, strict: bool) -> bool:
    """Whether the acceptor passes ``obj``: if so, the models find no error in it."""
    global _acceptor
    acceptor = _acceptor
    if acceptor is None:
        acceptor = _acceptor = _build_acceptor()
    try:
        acceptor.validate_python(obj, strict=strict)
    except CoreValidationError:
        return False
    return True


def validate(md: DeviceMetadata) -> list[FieldError]:
    """Check ``md`` against the Go reference's v1.37 validation rules.

    Returns every error (an empty list when valid), never raises for invalid
    data: validation is separate from decoding and never blocks it. Errors carry
    Go's paths and texts (``str(err)`` is Go's rendering). Loads pydantic_core,
    and pydantic only when ``md`` has an error (or a value the fast check cannot
    vouch for).

    >>> import dra_metadata as dm
    >>> bad = dm.DeviceMetadata(pod_claim_name="GPU")
    >>> [(e.field, e.type.value) for e in dm.validate(bad)]
    [('podClaimName', 'Invalid value')]
    """
    if not isinstance(md, DeviceMetadata):
        raise TypeError(f"validate() takes a DeviceMetadata, not {type(md).__name__}")
    # The acceptor reads msgspec's builtins form of ``md`` in the models' own lax
    # mode. It holds the values that wire_body() gives the models, except that
    # lists are still tuples (lax lists take them), non-string keys are not yet
    # strings and NaN is not yet null (the acceptor fails both, as no field of it
    # takes them), so what it passes the models pass too.
    try:
        builtins = msgspec.to_builtins(md)
    except Exception:
        pass  # a value msgspec cannot convert: wire_body() raises what it always raised
    else:
        if _accepts(builtins, strict=False):
            return []
    return _validate_wire(md.wire_body())  # fieldsV1 stays raw text: it is not validated


def validate_wire(obj: Mapping[str, object]) -> list[FieldError]:
    """Every validation error of a wire-form DeviceMetadata, as the Go reference gives them.

    ``obj`` is the JSON object with camelCase keys (``kind`` and ``apiVersion`` may
    be present; they are not validated). The errors come in Go's order, except that
    a device's attribute errors follow the map's order where Go's is random; errors
    whose text repeats an earlier one are dropped, as Go's aggregate drops them.
    Rule violations never raise; a value of the wrong JSON type (which no decoder
    produces) raises ``TypeError``.

    >>> [str(e) for e in validate_wire({"podClaimName": "gpu", "requests": [{"name": ""}]})]
    ['requests[0].name: Required value']
    """
    wire = obj if isinstance(obj, dict) else dict(obj)
    # Strict: any object, any Mapping inside; strict types take a subset of lax ones.
    if _accepts(wire, strict=True):
        return []
    return _validate_wire(wire)


def _validate_wire(obj: dict[str, Any]) -> list[FieldError]:
    """:func:`validate_wire` through the models, which find Go's errors (loads pydantic)."""
    # the pydantic models: only a wire object's validation needs them
    from ._validate_models import wire_errors

    return wire_errors(obj)
