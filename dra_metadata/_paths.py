"""Where the metadata files are: the container layout and safe path building.

Layout inside a container (KEP-5304)::

    <root>/resourceclaims/<claim>/<request>/<driver>-metadata.json
    <root>/resourceclaimtemplates/<podClaimName>/<request>/<driver>-metadata.json

``<root>`` is :data:`CONTAINER_DIR` unless the environment variable
``DRA_METADATA_ROOT`` says otherwise, or a ``root`` argument is given. A request
``req/sub`` (a subrequest of a prioritized list) lives in the directory ``req``.

Every name that becomes a path part is checked first: names that would leave the
request directory (``..``, ``/``, NUL, empty) or that hold a glob character
(``*``, ``?``, ``[``: no Kubernetes name does, and the Go reader would expand
them) raise :class:`InvalidNameError` before any file is touched.
"""

from __future__ import annotations

import os
from typing import Final, Literal

from ._errors import InvalidNameError

__all__ = [
    "CLAIM_WORDS",
    "CONTAINER_DIR",
    "METADATA_FILE_SUFFIX",
    "NODE_METADATA_FILE",
    "NODE_METADATA_SUBDIR",
    "RESOURCE_CLAIMS_SUBDIR",
    "RESOURCE_CLAIM_TEMPLATES_SUBDIR",
    "ROOT_ENV",
    "ClaimKind",
    "RootArg",
    "check_path",
    "claim_label",
    "default_root",
    "request_dir",
    "resource_claim_file_path",
    "resource_claim_template_file_path",
    "root_path",
]

#: Where the kubelet mounts the metadata files inside a container.
CONTAINER_DIR: Final = "/var/run/kubernetes.io/dra-device-attributes"
#: Subdirectory for claims referenced by name.
RESOURCE_CLAIMS_SUBDIR: Final = "resourceclaims"
#: Subdirectory for claims created from a ResourceClaimTemplate (keyed by the pod's claim name).
RESOURCE_CLAIM_TEMPLATES_SUBDIR: Final = "resourceclaimtemplates"
#: A metadata file is named ``<driver>`` + this suffix.
METADATA_FILE_SUFFIX: Final = "-metadata.json"
#: Environment variable that overrides :data:`CONTAINER_DIR` everywhere in the API.
ROOT_ENV: Final = "DRA_METADATA_ROOT"

# The kubelet plugin's layout on the node, under the driver's plugin data directory:
# <plugin data dir>/dra-device-metadata/<namespace>_<claim>/<base request>/metadata.json
#: Directory of the node-side metadata files inside a plugin's data directory.
NODE_METADATA_SUBDIR: Final = "dra-device-metadata"
#: The node-side file name of one request's metadata.
NODE_METADATA_FILE: Final = "metadata.json"

#: What every ``root`` parameter takes: a path (``str`` or path-like) to read instead of
#: :data:`CONTAINER_DIR`, or ``None`` for :func:`default_root`.
RootArg = str | os.PathLike[str] | None
#: How a pod references a claim, as the layout names it: ``"claim"`` for a ResourceClaim
#: referenced by name (under :data:`RESOURCE_CLAIMS_SUBDIR`), ``"template"`` for one made
#: from a ResourceClaimTemplate (under :data:`RESOURCE_CLAIM_TEMPLATES_SUBDIR`).
ClaimKind = Literal["claim", "template"]

#: How messages name each kind of claim (one word for every door).
CLAIM_WORDS: Final[dict[ClaimKind, str]] = {"claim": "claim", "template": "template claim"}


def claim_label(kind: ClaimKind, claim: str, request: str | None = None) -> str:
    """How messages name a claim, or one of its requests: ``template claim 'gpu' request 'gpu'``.

    >>> claim_label("claim", "nic"), claim_label("template", "gpu", "gpu")
    ("claim 'nic'", "template claim 'gpu' request 'gpu'")
    """
    return f"{CLAIM_WORDS[kind]} {claim!r}" + ("" if request is None else f" request {request!r}")


def default_root() -> str:
    """The root to use when none is given: ``$DRA_METADATA_ROOT`` or :data:`CONTAINER_DIR`."""
    return os.environ.get(ROOT_ENV) or CONTAINER_DIR


def root_path(root: RootArg) -> str:
    """``root`` as a path, or :func:`default_root` when it is ``None``.

    A root that is not text (``bytes``, a number) is a :class:`TypeError` saying so.
    """
    return default_root() if root is None else check_path("root", root)


def check_path(what: str, value: object) -> str:
    """``value`` as a ``str`` path; a :class:`TypeError` naming ``what`` for anything else.

    Bytes paths are refused on purpose: every message and every result names
    files by ``str`` (undecodable bytes as :func:`os.fsdecode` gives them).
    """
    try:
        name = os.fspath(value)  # type: ignore[call-overload]  # any object: checked here
    except TypeError:
        name = None
    if not isinstance(name, str):
        raise TypeError(
            f"{what} must be a str or os.PathLike[str], not {type(value).__name__}"
        ) from None
    return name


def check_name(kind: str, name: object) -> str:
    """Return ``name`` if it is one safe path component, else raise :class:`InvalidNameError`."""
    if not isinstance(name, str):
        raise InvalidNameError(f"{kind} name must be a string, not {type(name).__name__}")
    if not name:
        raise InvalidNameError(f"{kind} name must not be empty")
    if "\x00" in name:
        raise InvalidNameError(f"{kind} name {name!r} contains a NUL character")
    if "/" in name:
        raise InvalidNameError(f"{kind} name {name!r} contains '/'")
    if name in (".", ".."):
        raise InvalidNameError(f"{kind} name {name!r} would leave its directory")
    if _GLOB_CHARACTERS.intersection(name):
        found = "".join(sorted(_GLOB_CHARACTERS.intersection(name)))
        raise InvalidNameError(
            f"{kind} name {name!r} contains {found!r}: Kubernetes names cannot, and names are "
            "not patterns here; leave the request out to read every request of a claim"
        )
    return name


#: Characters a pattern would give a meaning to (Go's reader globs the names it is given).
_GLOB_CHARACTERS: Final = frozenset("*?[")


def request_base(request: object) -> str:
    """The directory name of ``request``: ``req`` for ``req`` and for ``req/sub``."""
    if isinstance(request, str) and request.count("/") == 1:
        base, sub = request.split("/")
        check_name("subrequest", sub)
        return check_name("request", base)
    if isinstance(request, str) and "/" in request:
        raise InvalidNameError(
            f"request name {request!r} has more than one '/': "
            "expected <request> or <request>/<subrequest>"
        )
    return check_name("request", request)


def request_dir(kind_subdir: str, claim: object, request: object, *, root: RootArg = None) -> str:
    """The request directory under ``kind_subdir`` (claims or templates), names checked."""
    claim_kind = "claim" if kind_subdir == RESOURCE_CLAIMS_SUBDIR else "pod claim"
    claim_name = check_name(claim_kind, claim)
    base = request_base(request)
    return os.path.join(root_path(root), kind_subdir, claim_name, base)


def metadata_file_name(driver: object) -> str:
    """``<driver>-metadata.json``, the driver name checked."""
    return check_name("driver", driver) + METADATA_FILE_SUFFIX


def driver_of(file_name: str) -> str:
    """The driver a metadata file is named after: :func:`metadata_file_name` undone.

    >>> driver_of("/r/resourceclaims/c/gpu/gpu.example.com-metadata.json")
    'gpu.example.com'
    """
    return file_name.rpartition("/")[2].removesuffix(METADATA_FILE_SUFFIX)  # os.path.basename


def resource_claim_file_path(driver: str, claim: str, request: str, *, root: RootArg = None) -> str:
    """Path of ``driver``'s metadata file for ``request`` of the claim named ``claim``.

    >>> resource_claim_file_path("gpu.example.com", "my-claim", "gpu/high-memory", root="/r")
    '/r/resourceclaims/my-claim/gpu/gpu.example.com-metadata.json'
    """
    name = metadata_file_name(driver)
    return os.path.join(request_dir(RESOURCE_CLAIMS_SUBDIR, claim, request, root=root), name)


def resource_claim_template_file_path(
    driver: str, pod_claim: str, request: str, *, root: RootArg = None
) -> str:
    """Path of ``driver``'s metadata file for a claim made from a template.

    ``pod_claim`` is the name of the claim in the pod spec (``podClaimName``).

    >>> resource_claim_template_file_path("gpu.example.com", "gpu", "gpu", root="/r")
    '/r/resourceclaimtemplates/gpu/gpu/gpu.example.com-metadata.json'
    """
    name = metadata_file_name(driver)
    return os.path.join(
        request_dir(RESOURCE_CLAIM_TEMPLATES_SUBDIR, pod_claim, request, root=root), name
    )
