"""Environment variables that carry a mounted claim's UID, joined to the claim.

Some drivers set variables through CDI whose name or value holds the claim UID
(dra-driver-cpu's ``DRA_CPUSET_<claimUID>``, the example driver's
``..._RESOURCE_CLAIM=<uid>``). :meth:`Inventory.claim_variables()
<dra_metadata.Inventory.claim_variables>` answers which, and ``doctor`` checks
the CPU driver's cpuset against them. It takes the mounted requests as data
(anything with a claim's kind, name, UID and request): it sits below the
inventory, which reads it, and imports nothing of the package.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Protocol

import msgspec

__all__ = ["ClaimVariable", "claim_variables"]


class ClaimVariable(msgspec.Struct, frozen=True, gc=False):
    """An environment variable a driver set that carries a claim's UID, joined to the claim.

    Some drivers set variables through CDI whose name or value holds the
    claim UID (the CPU driver's ``DRA_CPUSET_<claimUID>``, the example driver's
    ``..._RESOURCE_CLAIM=<uid>``). ``requests`` are that claim's mounted
    request directories.

    >>> v = ClaimVariable("DRA_CPUSET_AB", "0-3", "claim", "cpus", "ab", ("cpus",))
    >>> v.claim, v.requests
    ('cpus', ('cpus',))
    """

    #: The variable's name.
    name: str
    #: The variable's value.
    value: str
    #: How the pod references the claim: ``claim`` or ``template``.
    kind: str
    #: The claim's directory name.
    claim: str
    #: The claim UID the variable carries.
    uid: str
    #: The claim's mounted request directories.
    requests: tuple[str, ...]


class _Request(Protocol):
    """A mounted request, as this module reads it (``Inventory.requests``' items)."""

    @property
    def kind(self) -> str: ...
    @property
    def claim(self) -> str: ...
    @property
    def claim_uid(self) -> str | None: ...
    @property
    def request(self) -> str: ...


def claim_variables(
    requests: Iterable[_Request], environ: Mapping[str, str] | None = None
) -> list[ClaimVariable]:
    """The variables of ``environ`` (default ``os.environ``) that name a mounted claim's UID.

    A UID matches in the name with ``-`` or ``_`` between its groups, in any
    case, or anywhere in the value. Variables come in ``environ`` order.

    >>> import dra_metadata as dm
    >>> inv = dm.inventory("examples/topology-tree")
    >>> env = {"DRA_CPUSET_2B3C4D5E_6F70_4182_93A4_B5C6D7E8F901": "0-1,16-17", "HOME": "/"}
    >>> [(v.claim, v.requests, v.value) for v in claim_variables(inv.requests, env)]
    [('cpus', ('cpus',), '0-1,16-17')]
    """
    claims: dict[str, tuple[str, str, list[str]]] = {}
    for mounted in requests:
        uid = mounted.claim_uid
        if uid:
            claims.setdefault(uid, (mounted.kind, mounted.claim, []))[2].append(mounted.request)
    if not claims:
        return []
    keys = [(uid, uid.upper().replace("-", "_"), *rest) for uid, rest in claims.items()]
    found: list[ClaimVariable] = []
    for name, value in (os.environ if environ is None else environ).items():
        folded = name.upper().replace("-", "_")
        for uid, key, kind, claim, names in keys:
            if key in folded or uid in value:
                found.append(ClaimVariable(name, value, kind, claim, uid, tuple(names)))
                break
    return found
