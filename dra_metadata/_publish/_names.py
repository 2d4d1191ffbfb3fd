"""The publisher's first layer: a claim's identity, the names of its files, and their checks.

Everything here is pure: no file is opened. :class:`ClaimRef` names a claim;
:func:`claim_of` and :func:`request_of` refuse what Kubernetes cannot give (a
name that is no DNS label or subdomain, ``None``, ``..``, ``a/b/c``) with one
error that is both an :class:`~dra_metadata.InvalidNameError` and a
:class:`~dra_metadata.PublishError`; the rest names the files of a claim: its
lock and state (``<namespace>_<claim>``, shortened to fit ``NAME_MAX``), its CDI
spec, CDI device and CDI lock, and the lowest CDI version a spec needs.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._errors import InvalidNameError, PublishError
from .._field_error import go_quote
from .._formats import MAX_DRIVER_CHARACTERS, dns1123_label_messages, dns1123_subdomain_messages
from .._paths import check_name, request_base
from .._safedir import TEMP_SUFFIX
from .._versions import API_VERSIONS, NEWEST

__all__ = [
    "CDI_CLASS",
    "INT64_MAX",
    "POD_CLAIM_NAME_ANNOTATION",
    "PUBLISHER_STATE_SUBDIR",
    "ClaimRef",
    "NameRefused",
    "WrongArgument",
    "base_of",
    "cdi_device_name",
    "cdi_lock_name",
    "cdi_spec_name",
    "cdi_version",
    "check_driver",
    "check_fits",
    "check_timeout",
    "check_versions",
    "claim_of",
    "is_label",
    "lock_name",
    "request_of",
    "state_name",
]

#: The ResourceClaim annotation naming the pod's claim, set on claims made from a template.
POD_CLAIM_NAME_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
#: The subdirectory of the plugin data directory where the publisher keeps, per claim,
#: its lock file (``<namespace>_<claim>.lock``) and state file (``<namespace>_<claim>.state``):
#: a sibling of ``dra-device-metadata``, where no reader and no CDI spec looks. A
#: ``<namespace>_<claim>`` too long for those names is shortened, see
#: :meth:`MetadataPublisher.lock_path`.
PUBLISHER_STATE_SUBDIR: Final = "dra-metadata-publisher"
#: The CDI class of every metadata device: the kind is ``<driver>/metadata``.
CDI_CLASS: Final = "metadata"
#: The largest generation (``metadata.generation`` is an int64).
INT64_MAX: Final = 2**63 - 1

_CDI_SUFFIX: Final = ".json"
_LOCK_SUFFIX: Final = ".lock"
_STATE_SUFFIX: Final = ".state"
_NAME_MAX: Final = 255
#: The longest ``<namespace>_<claim>`` the lock and state names keep whole: with the
#: state's temporary (``.<stem>.state.tmp``) it is NAME_MAX.
_STEM_MAX: Final = _NAME_MAX - len(f".{_STATE_SUFFIX}{TEMP_SUFFIX}")
#: What a shortened stem keeps of ``<namespace>_<claim>``, before ``_<40 hex digits>``.
_STEM_KEEP: Final = 200


class NameRefused(InvalidNameError, PublishError):
    """A name no Kubernetes object can have, refused by the publisher (both error kinds)."""


class WrongArgument(PublishError, TypeError):
    """An argument of the wrong type given to the publisher (both error kinds)."""


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """The identity of a ResourceClaim, as the publisher needs it.

    ``pod_claim_name`` is the value of the claim's
    ``resource.kubernetes.io/pod-claim-name`` annotation (the claim's name in the
    pod spec), set when the claim was made from a ResourceClaimTemplate; ``None``
    when the annotation is absent. Every name is checked as the readers check
    names; a name that is not a string, is empty, or would leave its directory
    raises an error that is both an :class:`~dra_metadata.InvalidNameError` and a
    :class:`~dra_metadata.PublishError`. The publisher's calls also refuse names
    Kubernetes cannot give (DNS labels and subdomains, no ``_``).

    >>> claim = ClaimRef(name="pod-gpu-x7k2p", namespace="ml", uid="c7e7", pod_claim_name="gpu")
    >>> claim.directory, claim.from_template
    ('ml_pod-gpu-x7k2p', True)
    """

    #: The ResourceClaim's name.
    name: str
    #: The ResourceClaim's namespace.
    namespace: str
    #: The ResourceClaim's UID.
    uid: str
    #: The claim's name in the pod spec (its ``resource.kubernetes.io/pod-claim-name``
    #: annotation) when it was made from a template; ``None`` otherwise.
    pod_claim_name: str | None = None

    def __post_init__(self) -> None:
        _safe("claim", self.name)
        _safe("namespace", self.namespace)
        _safe("claim UID", self.uid)
        if self.pod_claim_name is not None and self.pod_claim_name != "":
            # An empty annotation is kept in the file but places it under resourceclaims/.
            _safe("pod claim", self.pod_claim_name)

    @classmethod
    def from_resource_claim(cls, claim: Mapping[str, Any]) -> ClaimRef:
        """The reference to a ResourceClaim given in its wire form (a dict of its JSON).

        >>> ClaimRef.from_resource_claim({"metadata": {
        ...     "name": "pod-gpu-x", "namespace": "ml", "uid": "u-1",
        ...     "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"}}})
        ClaimRef(name='pod-gpu-x', namespace='ml', uid='u-1', pod_claim_name='gpu')
        """
        meta = claim.get("metadata") if isinstance(claim, Mapping) else None
        if not isinstance(meta, Mapping):
            raise NameRefused(f"a ResourceClaim needs a metadata object, not {claim!r:.80}")
        annotations = meta.get("annotations") or {}
        pod_claim_name = (
            annotations.get(POD_CLAIM_NAME_ANNOTATION) if isinstance(annotations, Mapping) else None
        )
        return cls(
            name=meta.get("name", ""),
            namespace=meta.get("namespace", ""),
            uid=meta.get("uid", ""),
            pod_claim_name=pod_claim_name,
        )

    @property
    def directory(self) -> str:
        """The claim's directory on the node: ``<namespace>_<name>``."""
        return f"{self.namespace}_{self.name}"

    @property
    def from_template(self) -> bool:
        """Whether containers find the claim under ``resourceclaimtemplates/``."""
        return bool(self.pod_claim_name)


# --- the checks of a call's arguments --------------------------------------------------------


def claim_of(claim: object) -> ClaimRef:
    """``claim``, if it is a :class:`ClaimRef` whose names Kubernetes could have made."""
    if not isinstance(claim, ClaimRef):
        raise WrongArgument(f"claim must be a ClaimRef, not {claim!r}")
    _check_dns("claim", claim.name, subdomain=True)
    _check_dns("namespace", claim.namespace)
    _check_dns("claim UID", claim.uid)
    if claim.pod_claim_name:
        _check_dns("pod claim", claim.pod_claim_name)
    return claim


def base_of(request: object) -> str:
    """The base of ``request`` (``gpu`` of ``gpu/high-memory``), if it is a safe path part."""
    if not isinstance(request, str):
        raise NameRefused(f"request name must be a string, not {request!r}")
    try:
        return request_base(request)
    except InvalidNameError as err:
        raise _refused(err, request) from None


def request_of(request: object) -> str:
    """The base of ``request`` (``gpu`` of ``gpu/high-memory``), if Kubernetes could name it so."""
    base = base_of(request)
    assert isinstance(request, str)  # base_of checked it
    _check_dns("request", base)
    if "/" in request:
        _check_dns("subrequest", request.partition("/")[2])
    return base


def check_driver(driver: object) -> str:
    """``driver``, if it is a DNS subdomain of at most 63 characters and a CDI vendor."""
    name = _safe("driver", driver)
    _check_dns("driver", name, subdomain=True, limit=MAX_DRIVER_CHARACTERS)
    if (
        not _is_letter(name[0])
        or not _is_alnum(name[-1])
        or not all(_is_alnum(c) or c in "-_." for c in name)
    ):
        raise NameRefused(
            f"driver name {name!r} cannot be the vendor of a CDI kind: it must start with a "
            "letter, end with a letter or digit, and hold only letters, digits, '-', '_' and '.'"
        )
    return name


def check_fits(claim: ClaimRef, claim_dir: str, label: str) -> None:
    """Refuse a claim whose directory ``<namespace>_<claim>`` no file system can name (as Go's
    layout cannot hold it), before anything is written; ``label`` starts the message."""
    size = len(claim.directory.encode("utf-8", "surrogatepass"))
    if size > _NAME_MAX:
        raise PublishError(
            f"{label}: {claim_dir}: {os.strerror(errno.ENAMETOOLONG).lower()}: the claim's "
            f"directory <namespace>_<claim> is {size} bytes, and a file name can have {_NAME_MAX}",
            path=claim_dir,
        )


def check_versions(versions: Iterable[str]) -> tuple[str, ...]:
    """The API versions a publisher writes, checked as the Go kubelet plugin checks them."""
    if isinstance(versions, str) or not isinstance(versions, Iterable):
        raise WrongArgument(f"versions must be a list of API versions, not {versions!r}")
    chosen = tuple(versions)
    if not chosen:
        raise PublishError("metadata versions must be explicitly selected, none chosen")
    for version in chosen:
        if version not in API_VERSIONS:
            raise PublishError(
                f"metadata version {go_quote(str(version))} is not supported "
                f"(supported: {', '.join(API_VERSIONS)})"
            )
    if NEWEST not in chosen:
        raise PublishError(
            f"the latest metadata version is {NEWEST} and must be enabled explicitly"
        )
    if list(chosen) != sorted(chosen, key=API_VERSIONS.index):
        raise PublishError(
            f"metadata versions must be listed newest first ({', '.join(API_VERSIONS)}): "
            "readers take the first version they know, and lint (DRA105) refuses another order"
        )
    return chosen


def check_timeout(timeout: object) -> float:
    """A lock timeout: a finite number of seconds, 0 or more."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 <= timeout < math.inf
    ):
        raise PublishError(f"lock_timeout must be a number of seconds, 0 or more, not {timeout!r}")
    return float(timeout)


def is_label(name: str) -> bool:
    """Whether ``name`` is a DNS label (a request's directory; anything else is not ours)."""
    return not dns1123_label_messages(name)


# --- the names of a claim's files ------------------------------------------------------------


def lock_name(claim: ClaimRef) -> str:
    """The claim's lock file in the publisher's directory: ``<stem>.lock``."""
    return f"{_file_stem(claim)}{_LOCK_SUFFIX}"


def state_name(claim: ClaimRef) -> str:
    """The claim's state file in the publisher's directory: ``<stem>.state``."""
    return f"{_file_stem(claim)}{_STATE_SUFFIX}"


def cdi_device_name(claim: ClaimRef, base: str) -> str:
    """The device's name in the CDI spec: ``<claim uid>_<base request>``, valid in CDI."""
    name = f"{claim.uid}_{base}"
    if (
        not _is_alnum(name[0])
        or not _is_alnum(name[-1])
        or not all(_is_alnum(c) or c in "-_.:" for c in name)
    ):
        raise NameRefused(
            f"CDI device name {name!r} (<claim uid>_<request>) is not valid in CDI: it must "
            "start and end with a letter or digit and hold only letters, digits, '-', '_', "
            "'.' and ':'"
        )
    return name


def cdi_spec_name(driver: str, claim: ClaimRef, base: str) -> str:
    """The spec file of ``base``: ``<driver>_metadata_<claim uid>_<base>.json``."""
    return f"{driver}_{CDI_CLASS}_{cdi_device_name(claim, base)}{_CDI_SUFFIX}"


def cdi_lock_name(driver: str, claim: ClaimRef) -> str:
    """The lock over the claim's specs: ``.<driver>_metadata_<uid>.lock`` (hidden, no .json)."""
    return f".{driver}_{CDI_CLASS}_{claim.uid}{_LOCK_SUFFIX}"


def cdi_version(device_name: str) -> str:
    """The lowest CDI spec version a metadata spec needs.

    Of what a metadata spec holds (a kind whose class has no dot, one device,
    one mount without a type, no annotations) only a device name that starts
    with something other than a letter needs more than 0.3.0: 0.5.0.
    """
    return "0.3.0" if _is_letter(device_name[0]) else "0.5.0"


def _file_stem(claim: ClaimRef) -> str:
    """``<namespace>_<claim>``, shortened to fit NAME_MAX with the lock and state suffixes.

    Longer than :data:`_STEM_MAX` bytes: its first 200 bytes, ``_`` and 40 hex digits
    of its SHA-256. Kubernetes names hold no ``_``, so a shortened stem (two) is
    never a whole one (one).
    """
    directory = claim.directory
    raw = directory.encode("utf-8", "surrogatepass")
    if len(raw) <= _STEM_MAX:
        return directory
    import hashlib  # only for names past 244 bytes

    keep = raw[:_STEM_KEEP].decode("utf-8", "ignore")
    return f"{keep}_{hashlib.sha256(raw).hexdigest()[:40]}"


def _safe(kind: str, name: object) -> str:
    """``name``, if it is one safe path component; else refused, the value named."""
    if not isinstance(name, str):
        raise NameRefused(f"{kind} name must be a string, not {name!r}")
    try:
        return check_name(kind, name)
    except InvalidNameError as err:
        raise _refused(err, name) from None


def _refused(err: InvalidNameError, name: str) -> NameRefused:
    """The readers' refusal of ``name`` as the publisher's, the value named."""
    message = str(err)
    return NameRefused(message if repr(name) in message else f"{message}: {name!r}")


def _check_dns(kind: str, name: str, *, subdomain: bool = False, limit: int | None = None) -> None:
    """Refuse a name Kubernetes cannot give: a DNS-1123 label, or subdomain, lower case."""
    _safe(kind, name)
    messages = dns1123_subdomain_messages(name) if subdomain else dns1123_label_messages(name)
    if limit is not None and len(name) > limit:
        messages.insert(0, f"must be no more than {limit} characters")
    if messages:
        form = "a lower-case DNS subdomain" if subdomain else "a lower-case DNS label"
        raise NameRefused(
            f"{kind} name {name!r} is not one Kubernetes gives ({form}): {'; '.join(messages)}"
        )


def _is_letter(char: str) -> bool:
    return char.isascii() and char.isalpha()


def _is_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()
