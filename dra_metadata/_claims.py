"""Reading a claim's metadata by name: exactly the request asked, or every request.

The readers walk the documented layout with :func:`~dra_metadata._select.scan`, so
they follow no symbolic link below the root (the root itself may be one), and
every "not there" is worded by :mod:`._nearby`. Beyond what the Go reference
does, on purpose:

* a subrequest is checked (by the one resolver, :mod:`._select`, as every door
  checks it): asking for ``gpu/low-memory`` when the claim got
  ``gpu/high-memory`` is a :class:`~dra_metadata.MetadataNotFoundError` naming the
  one that was allocated (Go reads the directory ``gpu`` and returns it);
* leaving the request out reads every request of the claim, merged (what Go
  callers get by passing ``*``, which Go globs; here names are never patterns).
"""

from __future__ import annotations

import os
from typing import Literal, overload

import msgspec.structs

from ._model import DeviceMetadata, DeviceMetadataRequest, MergedDeviceMetadata
from ._paths import RootArg, check_path, request_base, root_path
from ._read import DEFAULT_MAX_SIZE, check_max_size
from ._select import ClaimKind, MountedFile, Place, ask, merged, narrow, resolve, scan

__all__ = ["read_request", "read_resource_claim", "read_resource_claim_template"]


def read_request(
    kind: ClaimKind,
    claim: str,
    request: str | None = None,
    *,
    driver: str | None = None,
    root: RootArg = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> MergedDeviceMetadata:
    """The files of one claim's request (every request when ``None``), merged.

    Raises the error of the first file that does not read or decode, and
    :class:`~dra_metadata.MetadataNotFoundError` when nothing matches;
    :class:`TypeError` for a ``root`` that is not a ``str`` path (bytes
    included) and a ``max_size`` that is not an ``int`` (``None`` included:
    every read is bounded; pass a larger int for a larger cap).
    """
    return _read_entries(kind, claim, request, driver, root, max_size)[0]


def _read_entries(
    kind: ClaimKind,
    claim: str,
    request: str | None,
    driver: str | None,
    root: RootArg,
    max_size: int,
) -> tuple[MergedDeviceMetadata, list[MountedFile]]:
    question = ask(kind=kind, claim=claim, request=request, driver=driver)
    top = root_path(None if root is None else check_path("root", root))
    limit = check_max_size(max_size)
    entries = scan(top, kind=kind, claim=claim, request=request, driver=driver, max_size=limit)
    md = merged(entries)
    if request is not None:
        place = Place(
            kind,
            claim,
            request_base(request),
            os.path.dirname(entries[0].path),
            tuple(r.name for r in md.requests),
        )
        ((_, names),) = resolve(question, top, [place])
        md = narrow(md, names)
    return md, entries


@overload
def read_resource_claim(
    claim: str,
    request: str | None = None,
    *,
    driver: None = None,
    root: RootArg = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> MergedDeviceMetadata: ...
@overload
def read_resource_claim(
    claim: str,
    request: str | None = None,
    *,
    driver: str,
    root: RootArg = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> DeviceMetadata: ...
def read_resource_claim(
    claim: str,
    request: str | None = None,
    *,
    driver: str | None = None,
    root: RootArg = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> DeviceMetadata:
    """The metadata of ``request`` of the claim named ``claim`` (``resourceclaims/<claim>``).

    ``request`` is ``req`` (whatever subrequest was allocated), ``req/sub``
    (exactly that subrequest, else :class:`~dra_metadata.MetadataNotFoundError`
    naming the one allocated) or ``None`` (every request of the claim). With
    ``driver``, that driver's file alone, as a :class:`DeviceMetadata`; without,
    every driver's file merged, as a :class:`MergedDeviceMetadata`.

    No symbolic link below ``root`` is followed (``root`` itself may be one):
    a link where a claim, request or file should be is a
    :class:`~dra_metadata.SymlinkError`, and no FIFO or device is ever opened.
    ``root`` must be a ``str`` path (bytes are a :class:`TypeError`) and
    ``max_size`` an ``int`` (``None`` is a :class:`TypeError`: every read is
    bounded, pass a larger int for a larger cap).

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim("nic", "eth", root="examples/dra-device-attributes")
    >>> md.requests[0].devices[0].network_data.interface_name
    'net1'
    """
    return _read("claim", claim, request, driver, root, max_size)


@overload
def read_resource_claim_template(
    pod_claim: str,
    request: str | None = None,
    *,
    driver: None = None,
    root: RootArg = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> MergedDeviceMetadata: ...
@overload
def read_resource_claim_template(
    pod_claim: str,
    request: str | None = None,
    *,
    driver: str,
    root: RootArg = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> DeviceMetadata: ...
def read_resource_claim_template(
    pod_claim: str,
    request: str | None = None,
    *,
    driver: str | None = None,
    root: RootArg = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> DeviceMetadata:
    """The metadata of ``request`` of a claim made from a ResourceClaimTemplate.

    ``pod_claim`` is the claim's name in the pod spec (``spec.resourceClaims[].name``).
    ``request`` and ``driver`` work as in :func:`read_resource_claim`.

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim_template("gpu", "gpu", root="examples/dra-device-attributes")
    >>> [d.attribute("uuid") for d in md.requests[0].devices]
    ['GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11', 'GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22']
    >>> dm.read_resource_claim_template("inference", "gpu", root="examples/dra-device-attributes"
    ...                                 ).requests[0].name
    'gpu/high-memory'
    """
    return _read("template", pod_claim, request, driver, root, max_size)


def _read(
    kind: Literal["claim", "template"],
    claim: str,
    request: str | None,
    driver: str | None,
    root: RootArg,
    max_size: int,
) -> DeviceMetadata:
    md, entries = _read_entries(kind, claim, request, driver, root, max_size)
    if driver is None or len(entries) != 1:
        return md  # merged (one driver's files of every request, with request=None)
    # One driver's file: the file's own object, narrowed as the merged one was.
    single = entries[0].metadata
    assert single is not None  # merged() raised the entry's error otherwise
    if len(md.requests) == len(single.requests):
        return single
    names = {r.name for r in md.requests}
    kept: tuple[DeviceMetadataRequest, ...] = tuple(r for r in single.requests if r.name in names)

    return msgspec.structs.replace(single, requests=kept)
