"""What a watch follows and how: the caller's selection and options, checked once.

Every public function builds a :class:`Plan` with :func:`plan` when it is called
(so a bad argument fails then, not when the watch is iterated); a
:class:`~._run.Run` carries it out.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

import msgspec

from .._errors import InvalidNameError
from .._model import DeviceMetadata
from .._paths import (
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    ClaimKind,
    RootArg,
    metadata_file_name,
    request_dir,
    root_path,
)
from .._select import Place, Question, ask, resolve
from ._backends import Backend, check_backend

if TYPE_CHECKING:
    import logging

__all__ = [
    "DEFAULT_RESCAN_INTERVAL",
    "Options",
    "Plan",
    "StopEvent",
    "Target",
    "check_root",
    "logger",
    "plan",
]

#: Seconds between the safety-net re-reads of every file (events come much sooner).
DEFAULT_RESCAN_INTERVAL: Final = 2.0


def logger() -> logging.Logger:
    """The ``dra_metadata`` logger (:mod:`..._log`), imported when there is something to say."""
    # logging loads only when something is logged
    from .._log import logger as package_logger

    return package_logger()


@runtime_checkable
class StopEvent(Protocol):
    """Anything with ``is_set()``: a ``threading.Event``, an ``asyncio.Event`` ..."""

    def is_set(self) -> bool:
        """Whether the watch should end."""


# --- what is watched ---------------------------------------------------------------------


class Target(msgspec.Struct, frozen=True):
    """The request directory a watch follows, and the one driver's file if one is asked for."""

    directory: str  # the request directory, as built from the caller's root
    absolute: str  # the same, absolute (the ancestor walk needs it)
    driver: str | None
    file_name: str | None  # <driver>-metadata.json when one driver is watched
    root: str  # the caller's root (it may be a link; nothing below it may)
    parts: tuple[str, str, str]  # the kind directory, the claim and the request below it
    question: Question  # what was asked, for the one resolver (a subrequest is checked)
    subrequest: bool  # question.subrequest: else every request of a file answers

    def answers(self, md: DeviceMetadata) -> tuple[str, ...]:
        """The request names of ``md`` that answer; the readers' not-found when none does.

        A file holding another subrequest than the one asked (``gpu/high-memory``
        for ``gpu/low-memory``) can never come to hold it: the allocation is made
        once, so the watch ends there with the error every door gives.
        """
        names = tuple([request.name for request in md.requests])
        if not self.subrequest:
            return names
        subdir, claim, base = self.parts
        kind: ClaimKind = "claim" if subdir == RESOURCE_CLAIMS_SUBDIR else "template"
        ((_, kept),) = resolve(
            self.question, self.root, [Place(kind, claim, base, self.directory, names)]
        )
        return kept


class Options(msgspec.Struct, frozen=True):
    """How a watch looks: the safety net's period, the error deadline, the size cap, the backend."""

    rescan_interval: float
    error_timeout: float
    max_size: int
    backend: Backend


class Plan(msgspec.Struct, frozen=True):
    """What one watch follows and how, checked when the caller called."""

    target: Target
    options: Options


def plan(
    claim: str | None,
    pod_claim: str | None,
    request: str,
    driver: str | None,
    root: RootArg,
    rescan_interval: float,
    error_timeout: float,
    max_size: int,
    backend: str,
) -> Plan:
    """The :class:`Plan` for the public functions' arguments, in their signatures' order.

    Checks the selection first (names, exactly one of ``claim`` and
    ``pod_claim``), then the options: every public function fails when it is
    called, not when it is iterated.
    """
    if (claim is None) == (pod_claim is None):
        raise TypeError("give exactly one of claim= and pod_claim=")
    top = check_root(root)
    subdir = RESOURCE_CLAIMS_SUBDIR if claim is not None else RESOURCE_CLAIM_TEMPLATES_SUBDIR
    directory = request_dir(subdir, claim if claim is not None else pod_claim, request, root=top)
    file_name = None if driver is None else metadata_file_name(driver)
    claim_dir, base = os.path.split(directory)
    parts = (subdir, os.path.basename(claim_dir), base)
    question = ask(
        kind="claim" if claim is not None else "template",
        claim=claim if claim is not None else pod_claim,
        request=request,
        driver=driver,
    )
    target = Target(
        directory,
        os.path.abspath(directory),
        driver,
        file_name,
        top,
        parts,
        question,
        question.subrequest,
    )
    if isinstance(max_size, bool) or not isinstance(max_size, int):
        raise TypeError(f"max_size must be an int, not {type(max_size).__name__}")
    if not rescan_interval > 0:
        raise ValueError(f"rescan_interval must be positive, got {rescan_interval!r}")
    if not error_timeout >= 0:
        raise ValueError(f"error_timeout must not be negative, got {error_timeout!r}")
    options = Options(
        float(rescan_interval), float(error_timeout), max_size, check_backend(backend)
    )
    return Plan(target, options)


def check_root(root: RootArg) -> str:
    """``root`` as the path to watch under; checked as the readers check it.

    A bytes root is a :class:`TypeError`, a NUL in it an
    :class:`~dra_metadata.InvalidNameError`, both when the function is called.
    """
    top = root_path(root)
    if "\x00" in top:
        raise InvalidNameError(f"metadata root {top!r}: embedded null byte", path=top)
    return top
