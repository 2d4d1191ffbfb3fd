"""The one resolver: what "claim C, request R (or R/S, or none)" names under a root.

Every door asks its question here: the readers, :func:`~dra_metadata.inventory`'s
:meth:`~dra_metadata.Inventory.request` and :meth:`~dra_metadata.Inventory.devices`,
:func:`~dra_metadata.env_vars`, the watches and waits, the topology and every
command. So the same question gets the same answer, and the same not-found,
whichever door it comes through:

* no request: every request of the claim (of every claim when none is named);
* ``R``: the request directory ``R``, whatever subrequest was allocated there
  (its request name, ``R/S``, says which);
* ``R/S``: exactly that subrequest. A request directory ``R`` whose files hold
  another one (``gpu/high-memory`` when ``gpu/low-memory`` was asked) does not
  answer; when none answers, the error is a
  :class:`~dra_metadata.MetadataNotFoundError` naming what was allocated
  (:func:`not_allocated`), the same words through every door;
* a claim, request or driver that is not there at all is the not-found of
  :mod:`._nearby` (what was looked for, what is nearby, what to do).

>>> q = ask(kind="template", claim="inference", request="gpu/low-memory")
>>> place = Place("template", "inference", "gpu", "<dir>", ("gpu/high-memory",))
>>> try:
...     resolve(q, "examples/dra-device-attributes", [place])
... except Exception as err:
...     print(type(err).__name__, err.nearby)
MetadataNotFoundError ('gpu/high-memory',)
>>> resolve(ask(kind="template", claim="inference", request="gpu"), "<root>", [place])
[(0, ('gpu/high-memory',))]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

from ._errors import MetadataNotFoundError
from ._paths import ClaimKind, check_name, request_base

if TYPE_CHECKING:
    from ._model import MergedDeviceMetadata

__all__ = ["CLAIM_KINDS", "Place", "Question", "ask", "check_claim_kind", "narrow", "resolve"]

#: The claim kinds a ``claim_kind=`` parameter takes.
CLAIM_KINDS: tuple[ClaimKind, ...] = ("claim", "template")

_WORD = {"claim": "claim", "template": "template claim"}


def check_claim_kind(claim_kind: object, *, parameter: str = "claim_kind") -> ClaimKind | None:
    """``claim_kind`` if it is ``"claim"``, ``"template"`` or ``None``; a clear error otherwise.

    A device kind (``"gpu"``) given here is a :class:`ValueError` that says which
    parameter takes it (``Topology.nearest(kind=...)``), never a silent empty answer.
    """
    if claim_kind is None or claim_kind in CLAIM_KINDS:
        return claim_kind
    if not isinstance(claim_kind, str):
        raise TypeError(
            f"{parameter} must be 'claim', 'template' or None, not {type(claim_kind).__name__}"
        )
    raise ValueError(
        f"{parameter} must be 'claim' (a claim referenced by name) or 'template' (a claim "
        f"made from a template), not {claim_kind!r}; a device kind such as 'gpu' is "
        "Topology's kind= (inventory.topology().gpus, .nearest(device, kind=...))"
    )


class Question(msgspec.Struct, frozen=True, gc=False):
    """What a door was asked: which claim, which request, which driver (names checked).

    ``None`` means "any". ``request`` is ``req``, ``req/sub`` or ``None``.
    """

    kind: ClaimKind | None = None
    """``"claim"`` (a claim referenced by name), ``"template"`` or ``None``."""
    claim: str | None = None
    """The claim's name, or the pod-spec name of a claim made from a template."""
    request: str | None = None
    """The request as asked: ``req``, ``req/sub`` or ``None`` (every request)."""
    driver: str | None = None
    """One driver's files only, or ``None``."""

    @property
    def base(self) -> str | None:
        """The request directory asked for: ``gpu`` for ``gpu`` and ``gpu/high-memory``."""
        return None if self.request is None else self.request.partition("/")[0]

    @property
    def subrequest(self) -> bool:
        """Whether exactly one subrequest (``req/sub``) was asked for."""
        return self.request is not None and "/" in self.request

    @property
    def narrows(self) -> bool:
        """Whether a claim, request or driver was named (an empty answer is then a not-found)."""
        return self.claim is not None or self.request is not None or self.driver is not None

    def keeps(self, names: Iterable[str]) -> tuple[str, ...]:
        """Of the request names one request directory's files hold, those that answer.

        Every one of them for no request or a base request; exactly ``req/sub`` for a
        subrequest (``()`` when another subrequest was allocated).
        """
        if not self.subrequest:
            return tuple(names)
        return tuple(name for name in names if name == self.request)


def ask(
    *,
    kind: object = None,
    claim: object = None,
    request: object = None,
    driver: object = None,
    parameter: str = "kind",
) -> Question:
    """The checked :class:`Question`: unsafe names are an :class:`~dra_metadata.InvalidNameError`.

    A claim name without a kind names a claim of either kind; ``parameter``
    names the kind's parameter in :func:`check_claim_kind`'s error.
    """
    claim_kind = check_claim_kind(kind, parameter=parameter)
    if claim is not None:
        check_name("pod claim" if claim_kind == "template" else "claim", claim)
    if request is not None:
        request_base(request)
    if driver is not None:
        check_name("driver", driver)
    return Question(claim_kind, claim, request, driver)  # type: ignore[arg-type]  # checked


class Place(msgspec.Struct, frozen=True, gc=False):
    """One request directory found under the root, and the request names its files hold."""

    kind: ClaimKind
    claim: str
    request: str  # the directory: the base request name
    path: str  # the directory's path, for messages
    names: tuple[str, ...] | None  # None: none of its files could be read


def resolve(
    question: Question, root: str, places: Iterable[Place]
) -> list[tuple[int, tuple[str, ...]]]:
    """Which places answer ``question``, each with the request names in it that do.

    Returns ``(index, names)`` pairs, in order; a place whose files could not
    be read is kept (with no names) so that the door reports its problem.
    Raises :class:`~dra_metadata.MetadataNotFoundError` when the question named
    a claim, request or driver and nothing answers: :func:`not_allocated` when
    the request directory is there but holds another subrequest, else the
    not-found of :mod:`._nearby`.
    """
    kept: list[tuple[int, tuple[str, ...]]] = []
    refused: list[Place] = []
    for index, place in enumerate(places):
        if question.kind is not None and place.kind != question.kind:
            continue
        if question.claim is not None and place.claim != question.claim:
            continue
        if question.base is not None and place.request != question.base:
            continue
        if place.names is None:
            kept.append((index, ()))
            continue
        names = question.keeps(place.names)
        if names or not question.subrequest:
            # A directory asked for by its base request answers whatever its files hold,
            # no request entry at all included (Go's readers return that object too).
            kept.append((index, names))
        else:
            refused.append(place)
    if kept or not question.narrows:
        return kept
    if refused:
        raise not_allocated(question, root, refused)
    from ._nearby import not_found  # only on the way to an error

    raise not_found(
        root,
        kind=question.kind,
        claim=question.claim,
        request=question.request,
        driver=question.driver,
    )


def not_allocated(question: Question, root: str, places: Sequence[Place]) -> MetadataNotFoundError:
    """The not-found for a subrequest that was not allocated, naming the one(s) that were."""
    request = question.request
    base = question.base
    from ._nearby import closest_first  # only on the way to an error

    assert request is not None
    assert base is not None
    assert places
    allocated = [name for place in places for name in place.names or () if "/" in name]
    held = allocated or [name for place in places for name in place.names or ()]
    first = places[0]
    where = f"{_WORD[first.kind]} {first.claim!r}"
    if len({(place.kind, place.claim) for place in places}) > 1:
        where = f"{len(places)} claims"
    if allocated:
        detail = f"request {base!r} of {where} was allocated as {', '.join(allocated)}"
    else:
        detail = f"the files of request {base!r} of {where} hold {', '.join(held) or '(none)'}"
    return MetadataNotFoundError(
        f"subrequest {request!r} was not allocated: {detail}; ask for {base!r} to read "
        "whatever subrequest was allocated",
        path=first.path if len(places) == 1 else root,
        nearby=tuple(closest_first(request, held)),
    )


def narrow(md: MergedDeviceMetadata, names: tuple[str, ...]) -> MergedDeviceMetadata:
    """``md`` with only the requests named ``names`` (itself when it holds no other)."""
    if len(names) == len(md.requests):
        return md
    wanted = set(names)
    return msgspec.structs.replace(
        md, requests=tuple(request for request in md.requests if request.name in wanted)
    )
