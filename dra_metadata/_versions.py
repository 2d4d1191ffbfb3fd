"""The API versions of the device-metadata stream: the one module that lists them.

A metadata file holds the same ``DeviceMetadata`` once per API version of the
``metadata.resource.k8s.io`` group, newest first. Everything that depends on
which versions exist reads it from here: the fast and exact decoders, the
writer's default, validation, the JSON Schemas and lint. Adding a version (``v1``
when the API goes GA) starts with one line in :data:`API_VERSIONS`; the schema
file for it is then made by ``python -m dra_metadata._schema schemas``.

>>> API_VERSIONS
('metadata.resource.k8s.io/v1beta1', 'metadata.resource.k8s.io/v1alpha1')
>>> version_of(V1BETA1)
'v1beta1'
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "API_VERSIONS",
    "GROUP",
    "KIND",
    "NEWEST",
    "V1ALPHA1",
    "V1BETA1",
    "full_version",
    "version_of",
]

#: The API group of device metadata.
GROUP: Final = "metadata.resource.k8s.io"
#: The only kind of the group.
KIND: Final = "DeviceMetadata"

#: Full apiVersion of the v1alpha1 encoding (Kubernetes v1.36 and later).
V1ALPHA1: Final = f"{GROUP}/v1alpha1"
#: Full apiVersion of the v1beta1 encoding (Kubernetes v1.37 and later).
V1BETA1: Final = f"{GROUP}/v1beta1"

#: Every version this library decodes, validates and writes, newest first. The Go
#: kubelet plugin of v1.37 writes them all, in this order; all carry the same fields.
API_VERSIONS: Final[tuple[str, ...]] = (V1BETA1, V1ALPHA1)

#: The newest version: the one every current writer puts first.
NEWEST: Final = API_VERSIONS[0]


def version_of(api_version: str) -> str:
    """The version part of an apiVersion: ``v1beta1`` of ``metadata.resource.k8s.io/v1beta1``."""
    return api_version.rpartition("/")[2]


def full_version(api_version: str) -> str:
    """``api_version`` as a known full apiVersion; the version alone (``v1beta1``) is accepted.

    Raises ``ValueError`` naming the known versions for anything else.

    >>> full_version("v1alpha1")
    'metadata.resource.k8s.io/v1alpha1'
    """
    full = api_version if "/" in api_version else f"{GROUP}/{api_version}"
    if full not in API_VERSIONS:
        known = ", ".join(API_VERSIONS)
        raise ValueError(f"unknown apiVersion {api_version!r} (known: {known})")
    return full
