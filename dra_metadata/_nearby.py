"""Every "not there" in one wording: what was looked for, what is nearby, what to do.

A reader, a command or a wait that finds no metadata raises
:class:`~dra_metadata.MetadataNotFoundError` built here, so the library and every
command word the same failure the same way. The message keeps the Go
reference's words first (``no metadata files found in <dir>``, ``open metadata
file: open <path>: no such file or directory``) and goes on, on the same line,
with what exists nearby (the claims, template claims, requests or drivers that
are there, closest match first) and the likely cause and fix.

Looking around only lists directories by the documented layout; it opens no
file and follows no link.

>>> err = not_found("examples/dra-device-attributes", kind="claim", claim="gpu", request="gpu")
>>> print(err)  # doctest: +NORMALIZE_WHITESPACE
no metadata files found in examples/dra-device-attributes/resourceclaims/gpu/gpu: there is no
claim 'gpu', but a template claim 'gpu' exists (--template-claim gpu,
read_resource_claim_template()); claims here: cpus, vfio-gpu, nic, train
>>> err.nearby
('cpus', 'vfio-gpu', 'nic', 'train')
"""

from __future__ import annotations

import os
import stat
from typing import Final

from ._errors import MetadataNotFoundError
from ._model import DOMAIN_SEPARATOR, STANDARD_DOMAIN, Device
from ._paths import (
    CLAIM_WORDS,
    METADATA_FILE_SUFFIX,
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    ClaimKind,
    claim_label,
    driver_of,
    request_base,
)
from ._standard import (
    STANDARD_ALIASES,
    known_names,
    standard_answer,
    standard_name,
)
from ._text import did_you_mean

__all__ = [
    "MOUNT_HINT",
    "absent_attribute",
    "closest_first",
    "listing",
    "not_found",
    "nothing_mounted",
    "nothing_mounted_text",
    "subdir_of",
    "tried_names",
]

#: The usual cause of a claim that is not mounted, and the fix.
MOUNT_HINT: Final = (
    "the container must list the claim under resources.claims and its driver must have "
    "device metadata enabled; --root or DRA_METADATA_ROOT reads another tree"
)

_OPTION: Final = {"claim": "--claim", "template": "--template-claim"}
_READER: Final = {"claim": "read_resource_claim()", "template": "read_resource_claim_template()"}


def subdir_of(kind: ClaimKind) -> str:
    """The layout directory of a claim kind: ``resourceclaims`` or ``resourceclaimtemplates``."""
    return RESOURCE_CLAIMS_SUBDIR if kind == "claim" else RESOURCE_CLAIM_TEMPLATES_SUBDIR


def listing(directory: str, *, files: bool = False) -> list[str] | None:
    """The subdirectory (or ``*-metadata.json`` file) names of ``directory`` in byte order.

    ``None`` when ``directory`` itself cannot be listed. Links are not followed
    and count as nothing.
    """
    try:
        with os.scandir(directory) as entries:
            names = []
            for entry in entries:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if files:
                    if entry.name.endswith(METADATA_FILE_SUFFIX) and stat.S_ISREG(mode):
                        names.append(entry.name)
                elif stat.S_ISDIR(mode):
                    names.append(entry.name)
    except (OSError, ValueError):
        return None
    names.sort(key=os.fsencode)
    return names


def closest_first(wanted: str, names: list[str]) -> list[str]:
    """``names`` with those most like ``wanted`` first (prefixes first, then by similarity).

    >>> closest_first("sriov", ["gpu.example.com", "sriov.example.com"])
    ['sriov.example.com', 'gpu.example.com']
    """
    import difflib  # only on the way to an error

    def rank(name: str) -> tuple[int, float, bytes]:
        prefix = name.startswith(wanted) or wanted.startswith(name)
        ratio = difflib.SequenceMatcher(None, wanted.lower(), name.lower()).ratio()
        return (0 if prefix else 1, -ratio, os.fsencode(name))

    return sorted(names, key=rank)


def _quoted(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def nothing_mounted_text(root: str) -> str:
    """The one wording of an empty root, for every command and reader.

    >>> print(nothing_mounted_text("/tmp/empty"))  # doctest: +ELLIPSIS
    nothing is mounted under /tmp/empty; the container must list the claim under ...
    """
    guesses = _roots_nearby(root)
    if guesses:
        others = "".join(f" or --root {guess}" for guess in guesses[1:3])
        return (
            f"nothing is mounted under {root}; did you mean --root {guesses[0]}{others}? "
            f"({MOUNT_HINT})"
        )
    return f"nothing is mounted under {root}; {MOUNT_HINT}"


def _roots_nearby(root: str) -> list[str]:
    """Metadata roots one level from ``root``: below it (one too high), or above (too low).

    The directories in ``root`` (by name) that hold ``resourceclaims/`` or
    ``resourceclaimtemplates/``; else ``root``'s parent when ``root`` is one of those.
    """
    layout = (RESOURCE_CLAIMS_SUBDIR, RESOURCE_CLAIM_TEMPLATES_SUBDIR)
    if os.path.basename(os.path.normpath(root)) in layout:
        return [os.path.dirname(os.path.normpath(root)) or "."]
    return [
        os.path.join(root, name)
        for name in listing(root) or []
        if any(os.path.isdir(os.path.join(root, name, kind)) for kind in layout)
    ]


def nothing_mounted(root: str) -> MetadataNotFoundError:
    """The not-found of a root that exists and has no metadata file in the layout."""
    return MetadataNotFoundError(nothing_mounted_text(root), path=root)


def _missing_root(root: str) -> str:
    """Why ``root`` cannot be listed: missing, not a directory (saying what it is), unreadable."""
    try:
        info = os.stat(root)
    except FileNotFoundError:
        return f"the metadata root {root} does not exist, so nothing is mounted here"
    except (OSError, ValueError) as err:
        reason = os.strerror(err.errno).lower() if isinstance(err, OSError) and err.errno else err
        return f"the metadata root {root} cannot be looked at ({reason})"
    if not stat.S_ISDIR(info.st_mode):
        what = "a regular file" if stat.S_ISREG(info.st_mode) else "a special file"
        return (
            f"the metadata root {root} is {what}, not a directory; --root (or "
            "DRA_METADATA_ROOT) names the directory that holds resourceclaims/ and "
            "resourceclaimtemplates/"
        )
    return f"the metadata root {root} cannot be listed"


def not_found(
    root: str,
    *,
    kind: ClaimKind | None,
    claim: str | None,
    request: str | None,
    driver: str | None = None,
) -> MetadataNotFoundError:
    """The error for metadata that is not under ``root``, with what is nearby and what to do.

    ``kind`` and ``claim`` name the claim looked for (either may be ``None`` for
    "any"), ``request`` a request (``req`` or ``req/sub``; ``None`` for every
    request), ``driver`` a driver's file. Names are assumed checked.
    """
    base = None if request is None else request_base(request)
    message, nearby = _explain(root, kind, claim, base, driver)
    path = _looked_at(root, kind, claim, base, driver)
    return MetadataNotFoundError(message, path=path, nearby=tuple(nearby))


def _looked_at(
    root: str, kind: ClaimKind | None, claim: str | None, base: str | None, driver: str | None
) -> str:
    if kind is None or claim is None:
        return root
    path = os.path.join(root, subdir_of(kind), claim)
    if base is None:
        return path
    path = os.path.join(path, base)
    return path if driver is None else os.path.join(path, driver + METADATA_FILE_SUFFIX)


def _explain(
    root: str, kind: ClaimKind | None, claim: str | None, base: str | None, driver: str | None
) -> tuple[str, list[str]]:
    """The message and the names it offers instead."""
    lead = _lead(root, kind, claim, base, driver)
    if listing(root) is None:
        return f"{lead}: {_missing_root(root)}; " + MOUNT_HINT, []
    if kind is None or claim is None:
        return _explain_any_claim(root, lead, kind, base, driver)
    claims = listing(os.path.join(root, subdir_of(kind))) or []
    if claim not in claims:
        return _explain_claim(root, lead, kind, claim, claims)
    claim_dir = os.path.join(root, subdir_of(kind), claim)
    requests = listing(claim_dir) or []
    if base is None:
        return (
            f"{lead}: the {CLAIM_WORDS[kind]} directory {claim_dir} holds no request; "
            + MOUNT_HINT,
            [],
        )
    if base not in requests:
        ordered = closest_first(base, requests)
        if not ordered:
            return (
                f"{lead}: {claim_label(kind, claim)} has no request directory; " + MOUNT_HINT,
                [],
            )
        return (
            f"{lead}: {claim_label(kind, claim)} has no request {base!r}; "
            f"its requests: {_quoted(ordered)}",
            ordered,
        )
    request_path = os.path.join(claim_dir, base)
    drivers = [driver_of(name) for name in listing(request_path, files=True) or []]
    if driver is not None and drivers:
        ordered = closest_first(driver, drivers)
        return (
            f"{lead}: no file of driver {driver!r}; drivers of this request: "
            f"{_quoted(ordered)} (--driver takes the whole name)",
            ordered,
        )
    return (
        f"{lead}: the request directory has no *{METADATA_FILE_SUFFIX} file; the driver has "
        "not written it yet, or does not have device metadata enabled",
        [],
    )


def _lead(
    root: str, kind: ClaimKind | None, claim: str | None, base: str | None, driver: str | None
) -> str:
    """The Go reference's words for what was not found (or ours, where Go has none)."""
    if kind is not None and claim is not None and base is not None:
        directory = os.path.join(root, subdir_of(kind), claim, base)
        if driver is not None:
            path = os.path.join(directory, driver + METADATA_FILE_SUFFIX)
            return f"open metadata file: open {path}: no such file or directory"
        return f"no metadata files found in {directory}"
    what = []
    if claim is not None:
        what.append(claim_label(kind or "claim", claim))
    elif kind is not None:
        what.append("claims" if kind == "claim" else "template claims")
    if base is not None:
        what.append(f"request {base!r}")
    if driver is not None:
        what.append(f"driver {driver!r}")
    return f"no metadata files found for {', '.join(what) or 'any claim'} under {root}"


def _explain_claim(
    root: str, lead: str, kind: ClaimKind, claim: str, claims: list[str]
) -> tuple[str, list[str]]:
    other: ClaimKind = "template" if kind == "claim" else "claim"
    others = listing(os.path.join(root, subdir_of(other))) or []
    ordered = closest_first(claim, claims)
    here = f"; {CLAIM_WORDS[kind]}s here: {_quoted(ordered)}" if ordered else ""
    if claim in others:
        return (
            f"{lead}: there is no {claim_label(kind, claim)}, but a {claim_label(other, claim)} "
            f"exists ({_OPTION[other]} {claim}, {_READER[other]}){here}",
            ordered,
        )
    if not ordered and not others:
        return f"{lead}: {nothing_mounted_text(root)}", []
    if not ordered:
        return (
            f"{lead}: there is no {CLAIM_WORDS[kind]} here; {CLAIM_WORDS[other]}s here: "
            f"{_quoted(closest_first(claim, others))}; " + MOUNT_HINT,
            closest_first(claim, others),
        )
    return f"{lead}: there is no {claim_label(kind, claim)}{here}; " + MOUNT_HINT, ordered


def _explain_any_claim(
    root: str, lead: str, kind: ClaimKind | None, base: str | None, driver: str | None
) -> tuple[str, list[str]]:
    kinds: tuple[ClaimKind, ...] = ("claim", "template") if kind is None else (kind,)
    found: list[str] = []
    for claim_kind in kinds:
        for claim in listing(os.path.join(root, subdir_of(claim_kind))) or []:
            found.append(f"{CLAIM_WORDS[claim_kind]} {claim}")
    if not found:
        return f"{lead}: {nothing_mounted_text(root)}", []
    return f"{lead}; mounted here: {_quoted(found)}", found


def absent_attribute(device: Device, name: str, *, also: tuple[str, ...] = ()) -> str:
    """What to say of attribute ``name`` that ``device`` does not have.

    For a standard attribute, why the model has no answer: a negative NUMA node (no
    NUMA affinity, KEP-6072), a value not in its standard form, or else the names
    looked for (``looked for <driver>/pciBusID, resource.kubernetes.io/pciBusID, ...``).
    For any other name, the closest name the device has, or one of ``also`` (``did
    you mean 'uuid'?``); ``""`` when nothing is close.

    >>> from dra_metadata import Device, DeviceAttribute
    >>> dev = Device("gpu.example.com", "p", "gpu-0", {"uuid": DeviceAttribute(string="GPU-1")})
    >>> absent_attribute(dev, "uuuid")
    "did you mean 'uuid'?"
    >>> absent_attribute(dev, "numaNode")  # doctest: +ELLIPSIS
    'looked for gpu.example.com/numaNode, resource.kubernetes.io/numaNode, ...'
    >>> cpu = Device("dra.cpu", "p", "c", {"numaNode": DeviceAttribute(int=-1)})
    >>> print(absent_attribute(cpu, "numaNodes"))
    dra.cpu/numaNode is negative: no NUMA affinity, so no NUMA node is known (KEP-6072)
    """
    standard = standard_name(name)
    if standard is not None:
        found = standard_answer(device, name)
        if found is not None and found.why:  # -1, two roots, a value of no standard form
            return found.why
        return "looked for " + ", ".join(tried_names(device, standard))
    return did_you_mean(name, [*known_names(device), *also]).removeprefix("; ")


def tried_names(device: Device, standard: str) -> tuple[str, ...]:
    """The attributes :func:`~._model.lookup` tries for the standard attribute ``standard``.

    >>> from dra_metadata import Device
    >>> tried_names(Device("gpu.example.com", "p", "n"), "pciBusID")[:2]
    ('gpu.example.com/pciBusID', 'resource.kubernetes.io/pciBusID')
    """
    own, std = device.driver + DOMAIN_SEPARATOR, STANDARD_DOMAIN + DOMAIN_SEPARATOR
    names = (own + standard, std + standard, *STANDARD_ALIASES.get(standard, ()))
    return tuple(dict.fromkeys(names))
