"""Environment variables that carry a mounted claim's UID, joined to the claim.

Some drivers set variables through CDI whose name or value holds the claim UID
(dra-driver-cpu's ``DRA_CPUSET_<claimUID>``, the example driver's
``..._RESOURCE_CLAIM=<uid>``). :meth:`Inventory.claim_variables()
<dra_metadata.Inventory.claim_variables>` answers which, and ``doctor`` checks
the CPU driver's cpuset against them. This module reads an inventory and is read
by the inventory only when asked (no import circle: it imports the inventory for
type checkers only).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from ._inventory import Inventory

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


def claim_variables(
    inv: Inventory, environ: Mapping[str, str] | None = None
) -> list[ClaimVariable]:
    """The variables of ``environ`` (default ``os.environ``) that name a mounted claim's UID.

    A UID matches in the name with ``-`` or ``_`` between its groups, in any
    case, or anywhere in the value. Variables come in ``environ`` order.

    >>> import dra_metadata as dm
    >>> inv = dm.inventory("examples/topology-tree")
    >>> env = {"DRA_CPUSET_2B3C4D5E_6F70_4182_93A4_B5C6D7E8F901": "0-1,16-17", "HOME": "/"}
    >>> [(v.claim, v.requests, v.value) for v in claim_variables(inv, env)]
    [('cpus', ('cpus',), '0-1,16-17')]
    """
    claims: dict[str, tuple[str, str, list[str]]] = {}
    for mounted in inv.requests:
        uid = mounted.claim_uid
        if uid:
            claims.setdefault(uid, (mounted.kind, mounted.claim, []))[2].append(mounted.request)
    if not claims:
        return []
    keys = [(uid, uid.upper().replace("-", "_"), *rest) for uid, rest in claims.items()]
    found: list[ClaimVariable] = []
    for name, value in (os.environ if environ is None else environ).items():
        folded = name.upper().replace("-", "_")
        for uid, key, kind, claim, requests in keys:
            if key in folded or uid in value:
                found.append(ClaimVariable(name, value, kind, claim, uid, tuple(requests)))
                break
    return found
