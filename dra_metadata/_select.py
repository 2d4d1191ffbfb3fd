"""What a question names under a root: the walk of the layout, and the one resolver.

The walk
========

:func:`scan` walks a metadata root by the documented layout, and nothing else.
The layout is fixed (see :mod:`._paths`)::

    <root>/resourceclaims/<claim>/<request>/<driver>-metadata.json
    <root>/resourceclaimtemplates/<podClaimName>/<request>/<driver>-metadata.json

:func:`scan` visits exactly those directories and files. It never follows a
symbolic link below the root (the root itself may be one): every level is
opened relative to its parent's descriptor with ``O_NOFOLLOW``, so a link
swapped in while the walk runs is refused too. A link where a claim, request
or metadata file should be is reported as an :class:`MountedFile` with a :class:`Problem`, as is
a file that does not decode; other names are ignored, as Go's glob ignores
them. A metadata file is looked at before it is opened, so a FIFO or a device is
refused without ever being opened.

Entries come sorted: claims before templates, then by claim, request and file
name in byte order (the order Go merges a request's files in).

>>> entries = scan("examples/dra-device-attributes", kind="claim", claim="train")
>>> [(e.request, e.driver, e.problem) for e in entries]
[('accel', 'gpu.example.com', None), ('accel', 'rdma.example.com', None)]

The one resolver
================

:func:`resolve` says what "claim C, request R (or R/S, or none)" names among
the request directories the walk found. Every door asks its question here: the
readers, :func:`~dra_metadata.inventory`'s :meth:`~dra_metadata.Inventory.request`
and :meth:`~dra_metadata.Inventory.devices`, :func:`~dra_metadata.env_vars`, the
watches and waits, the topology and every command. So the same question gets
the same answer, and the same not-found, whichever door it comes through:

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

import errno
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, Literal

import msgspec

from ._errors import (
    DecodeError,
    DRAMetadataError,
    FileTooLargeError,
    InvalidNameError,
    MetadataNotFoundError,
    SymlinkError,
    os_reason,
)
from ._model import DeviceMetadata, MergedDeviceMetadata
from ._paths import (
    METADATA_FILE_SUFFIX,
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    ClaimKind,
    RootArg,
    check_name,
    claim_label,
    driver_of,
    metadata_file_name,
    request_base,
    root_path,
)
from ._read import DEFAULT_MAX_SIZE, check_max_size, decode_file, merge, open_metadata, read_fd

__all__ = [
    "CLAIM_KINDS",
    "KINDS",
    "ClaimKind",
    "MountedFile",
    "Place",
    "Problem",
    "ProblemKind",
    "Question",
    "ask",
    "check_claim_kind",
    "group",
    "merged",
    "narrow",
    "problem_kind",
    "resolve",
    "scan",
]


#: The two kinds of claim directory, in listing order, with their subdirectory.
KINDS: Final[tuple[tuple[ClaimKind, str], ...]] = (
    ("claim", RESOURCE_CLAIMS_SUBDIR),
    ("template", RESOURCE_CLAIM_TEMPLATES_SUBDIR),
)

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC


#: Why a file or directory of the layout could not be used.
ProblemKind = Literal["undecodable", "too-large", "symlink", "unreadable", "missing"]


def problem_kind(error: DRAMetadataError) -> ProblemKind:
    """One word for what went wrong: ``undecodable``, ``too-large``, ``symlink``..."""
    if isinstance(error, DecodeError):
        return "undecodable"
    if isinstance(error, FileTooLargeError):
        return "too-large"
    if isinstance(error, SymlinkError):
        return "symlink"
    if isinstance(error, MetadataNotFoundError):
        return "missing"
    return "unreadable"


class Problem(msgspec.Struct, frozen=True, gc=False):
    """A file or directory of the layout that could not be used, and why.

    ``status`` is one word (:data:`ProblemKind`), ``message`` the error's text
    (``error`` the exception itself, to raise or inspect). ``request`` and
    ``driver`` are ``""`` for a claim directory that could not be read.
    """

    #: Why, in one word: ``undecodable``, ``too-large``, ``symlink``, ``unreadable`` or
    #: ``missing``.
    status: ProblemKind
    #: How the pod references the claim: ``claim`` or ``template``.
    kind: ClaimKind
    #: The claim's directory name: its name, or the pod's claim name for a template.
    claim: str
    #: The request directory, or ``""`` for a claim directory that could not be read.
    request: str
    #: The driver whose file it is, or ``""`` for a directory.
    driver: str
    #: The file or directory that could not be used.
    path: str
    #: The error's text, one line.
    message: str
    #: The exception itself, to raise or inspect.
    error: DRAMetadataError


class MountedFile(msgspec.Struct, frozen=True, gc=False):
    """One place of the layout as found by :func:`scan`: a file's metadata, or its problem.

    ``request`` is ``""`` when a claim directory itself could not be read, and
    ``driver`` (from the file name) ``""`` for a directory. Exactly one of
    ``metadata`` and ``problem`` is set.
    """

    #: How the pod references the claim: ``claim`` or ``template``.
    kind: ClaimKind
    #: The claim's directory name.
    claim: str
    #: The request directory (the base request name); ``""`` for a claim directory.
    request: str
    #: The driver the file belongs to (from its name); ``""`` for a directory.
    driver: str
    #: The file's (or directory's) path.
    path: str
    #: The decoded object; ``None`` when the file has a problem.
    metadata: DeviceMetadata | None = None
    #: What went wrong with the file; ``None`` when it decoded.
    problem: Problem | None = None


def _unusable(
    kind: ClaimKind, claim: str, request: str, driver: str, path: str, error: DRAMetadataError
) -> MountedFile:
    """A place of the layout that could not be used, with its :class:`Problem`."""
    problem = Problem(problem_kind(error), kind, claim, request, driver, path, str(error), error)
    return MountedFile(kind, claim, request, driver, path, problem=problem)


def scan(
    root: RootArg = None,
    *,
    kind: ClaimKind | None = None,
    claim: str | None = None,
    request: str | None = None,
    driver: str | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> list[MountedFile]:
    """Every metadata file under ``root``, read and decoded, by layout only.

    ``kind``, ``claim``, ``request`` (``req`` or ``req/sub``) and ``driver``
    narrow the walk; names given are checked (:class:`InvalidNameError`) before
    anything is opened. Raises :class:`MetadataNotFoundError` when the root is
    missing, or when a claim, request or driver was named and nothing matches.
    Problems with single files or directories do not raise: they are entries
    with an ``error``.
    """
    check_max_size(max_size)  # before anything is looked at, even an empty root
    if claim is not None:
        if kind is None:
            raise ValueError("scan(): a claim name needs its kind")
        check_name("claim" if kind == "claim" else "pod claim", claim)
    base = None if request is None else request_base(request)
    file_name = None if driver is None else metadata_file_name(driver)
    top = root_path(root)
    try:
        root_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        from ._nearby import not_found  # only on the way to an error

        raise not_found(top, kind=kind, claim=claim, request=request, driver=driver) from None
    except ValueError as err:  # a NUL in the root
        raise InvalidNameError(f"metadata root {top!r}: {err}", path=top) from None
    except OSError as err:
        raise DRAMetadataError(f"metadata root {top}: {os_reason(err)}", path=top) from None
    walker = _Walker(top, max_size)
    try:
        for claim_kind, subdir in KINDS:
            if kind is None or kind == claim_kind:
                walker.kind_dir(root_fd, claim_kind, subdir, claim, base, file_name)
    finally:
        os.close(root_fd)
    entries = walker.entries
    if not entries and (claim is not None or base is not None or file_name is not None):
        from ._nearby import not_found  # only on the way to an error

        raise not_found(top, kind=kind, claim=claim, request=request, driver=driver)
    return entries


class _Walker:
    """The state of one walk: the root's path for messages, the entries found so far."""

    def __init__(self, top: str, max_size: int) -> None:
        self.top = top
        self.max_size = max_size
        self.entries: list[MountedFile] = []

    def kind_dir(
        self,
        root_fd: int,
        kind: ClaimKind,
        subdir: str,
        claim: str | None,
        base: str | None,
        file_name: str | None,
    ) -> None:
        path = os.path.join(self.top, subdir)
        fd = self._open_dir(root_fd, subdir, path, kind, "", "")
        if fd is None:
            return
        try:
            for name in _names(fd, path, claim, directories=True):
                claim_path = os.path.join(path, name)
                claim_fd = self._open_dir(fd, name, claim_path, kind, name, "")
                if claim_fd is None:
                    continue
                try:
                    for request in _names(claim_fd, claim_path, base, directories=True):
                        request_path = os.path.join(claim_path, request)
                        request_fd = self._open_dir(
                            claim_fd, request, request_path, kind, name, request
                        )
                        if request_fd is None:
                            continue
                        try:
                            self.request_dir(
                                request_fd, request_path, kind, name, request, file_name
                            )
                        finally:
                            os.close(request_fd)
                finally:
                    os.close(claim_fd)
        finally:
            os.close(fd)

    def _open_dir(
        self, parent: int, name: str, path: str, kind: ClaimKind, claim: str, request: str
    ) -> int | None:
        """``name`` under ``parent`` opened as a directory, or ``None`` (and maybe an entry)."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return None  # not there (or gone since it was listed): nothing to list
        except OSError as err:
            if err.errno in (errno.ENOTDIR, errno.ELOOP):
                if not _is_symlink(parent, name):
                    return None  # a file where a directory could be: not part of the layout
                error: DRAMetadataError = SymlinkError(
                    f"{path}: is a symbolic link; links below the metadata root are not followed",
                    path=path,
                )
            else:
                error = DRAMetadataError(f"open directory {path}: {os_reason(err)}", path=path)
        self.entries.append(_unusable(kind, claim, request, "", path, error))
        return None

    def request_dir(
        self,
        fd: int,
        path: str,
        kind: ClaimKind,
        claim: str,
        request: str,
        file_name: str | None,
    ) -> None:
        for name in _names(fd, path, file_name, directories=False):
            if not name.endswith(METADATA_FILE_SUFFIX):
                continue
            file_path = os.path.join(path, name)
            driver = driver_of(name)
            try:
                md = self._read(fd, name, file_path)
            except DRAMetadataError as err:
                self.entries.append(_unusable(kind, claim, request, driver, file_path, err))
            else:
                self.entries.append(
                    MountedFile(kind, claim, request, driver, file_path, metadata=md)
                )

    def _read(self, dir_fd: int, name: str, path: str) -> DeviceMetadata:
        # Looked at before it is opened (a FIFO or device never is), never followed.
        fd = open_metadata(path, name=name, dir_fd=dir_fd)
        try:
            return decode_file(path, read_fd(fd, path, max_size=self.max_size))
        finally:
            os.close(fd)


def _names(fd: int, path: str, only: str | None, *, directories: bool) -> list[str]:
    """The names in the open directory ``fd`` in byte order, or just ``only`` if it is there."""
    if only is not None:
        try:
            os.stat(only, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return []
        except OSError as err:
            raise DRAMetadataError(f"{os.path.join(path, only)}: {os_reason(err)}") from None
        return [only]
    try:
        with os.scandir(fd) as listing:
            names = [
                entry.name
                for entry in listing
                if not directories or entry.is_dir(follow_symlinks=False) or entry.is_symlink()
            ]
    except OSError as err:
        raise DRAMetadataError(f"list directory {path}: {os_reason(err)}", path=path) from None
    names.sort(key=os.fsencode)
    return names


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def group(entries: list[MountedFile]) -> Iterator[list[MountedFile]]:
    """The entries of :func:`scan` grouped by request directory, in order.

    A claim directory that could not be read is a group of its own.
    """
    current: list[MountedFile] = []
    for entry in entries:
        if current and (entry.kind, entry.claim, entry.request) != (
            current[0].kind,
            current[0].claim,
            current[0].request,
        ):
            yield current
            current = []
        current.append(entry)
    if current:
        yield current


def merged(entries: list[MountedFile]) -> MergedDeviceMetadata:
    """The files of one request directory merged as Go merges them; raises the first error."""
    files: list[tuple[str, DeviceMetadata]] = []
    for entry in entries:
        if entry.problem is not None:
            raise entry.problem.error
        assert entry.metadata is not None  # a file has metadata or a problem
        files.append((entry.path, entry.metadata))
    return merge(files)


#: The claim kinds a ``claim_kind=`` parameter takes.
CLAIM_KINDS: tuple[ClaimKind, ...] = tuple(kind for kind, _ in KINDS)


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
    where = claim_label(first.kind, first.claim)
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
