"""What a metadata file holds: the object built, encoded once, and checked once as readers read it.

:func:`checked` is the publisher's one gate: the bytes of an object at its final
generation, if every reader takes them as they are. It encodes once
(:func:`~dra_metadata.encode`), checks the size against the readers' limit,
decodes and lints in one pass over the stream (:func:`~.._lint.lint_decoded`,
the readers' own code), compares the decoded object with the one given (a value
that would not read back, such as a lone surrogate, differs), and validates that
same decoded object (:func:`~dra_metadata.validate`).
"""

from __future__ import annotations

from collections.abc import Iterable

from .._encode import encode
from .._errors import DecodeError, PublishError
from .._model import Device, DeviceMetadata, DeviceMetadataRequest, ObjectMeta
from .._read import DEFAULT_MAX_SIZE
from ._names import ClaimRef, WrongArgument

__all__ = ["build", "checked", "devices_of"]


def build(
    claim: ClaimRef,
    request: str,
    devices: tuple[Device, ...],
    generation: int,
    pod_claim_name: str | None,
) -> DeviceMetadata:
    """The object a file of ``request`` holds, as the kubelet plugin builds it."""
    return DeviceMetadata(
        metadata=ObjectMeta(
            name=claim.name, namespace=claim.namespace, uid=claim.uid, generation=generation
        ),
        pod_claim_name=pod_claim_name,
        requests=(DeviceMetadataRequest(request, devices),),
    )


def devices_of(devices: object, driver: str) -> tuple[Device, ...]:
    """``devices`` as a tuple, if each is a :class:`~dra_metadata.Device` of ``driver``."""
    if isinstance(devices, Device) or not isinstance(devices, Iterable):
        raise WrongArgument(f"devices must be a list of Device objects, not {devices!r}")
    listed = tuple(devices)
    for device in listed:
        if not isinstance(device, Device):
            raise WrongArgument(f"devices must be Device objects, not {device!r}")
        if device.driver != driver:
            raise PublishError(
                f"device {device.pool}/{device.name} is from driver {device.driver!r}; "
                f"this publisher writes the metadata of {driver!r} only"
            )
    return listed


def checked(md: DeviceMetadata, versions: tuple[str, ...], what: str) -> bytes:
    """The bytes of ``md``, if every reader takes them as they are; else a PublishError.

    ``what`` starts each message (the call's label, or the device being made).
    """
    from .._lint import lint_decoded  # the checks load with the first call, not the package
    from .._validate import validate

    try:
        data = encode(md, versions)
    except (TypeError, ValueError) as err:
        raise PublishError(f"{what}: encode metadata: {err}") from err
    if len(data) > DEFAULT_MAX_SIZE:
        raise PublishError(
            f"{what}: the file would be {len(data)} bytes; readers refuse files over "
            f"{DEFAULT_MAX_SIZE} bytes"
        )
    try:
        decoded, problems = lint_decoded(data)
    except DecodeError as err:
        raise PublishError(f"{what}: readers could not decode the file: {err}") from None
    if decoded.wire_body() != md.wire_body():
        raise PublishError(
            f"{what}: the file would not read back as given (a string that is not valid "
            "UTF-8, such as a lone surrogate, or a value of the wrong kind)"
        )
    errors = validate(decoded)
    if errors:
        raise PublishError(f"{what}: readers would refuse the file: {errors[0]}")
    if problems:
        first = problems[0]
        raise PublishError(f"{what}: lint finds {first.code} at {first.field}: {first.message}")
    return data
