"""The claim's CDI specs: one per request, each a read-only bind mount of its metadata file.

``<cdi dir>/<driver>_metadata_<claim uid>_<base request>.json``, kind
``<driver>/metadata``, one device ``<claim uid>_<base request>`` whose one mount
is the node file on the container path the readers use, and the lowest
``cdiVersion`` that content needs. Written as Go's kubelet plugin writes them
(two-space indent, Go's escapes, an empty top-level ``containerEdits``).

The CDI directory is shared by every publisher of the driver, whatever its
plugin data directory: a claim's specs are written under the claim's CDI lock
(``.<driver>_metadata_<uid>.lock``), and a spec whose mount is not this
publisher's file (another publisher wrote it) is refused, never overwritten or
removed. :class:`CdiSpecs` opens the directory once per call.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterable
from typing import Any, Final

from .._encode import _go_escape
from .._errors import PublishError
from .._paths import NODE_METADATA_SUBDIR
from .._safedir import InTheWay, SafeDir
from ._call import Call
from ._lock import ClaimLock
from ._names import CDI_CLASS, ClaimRef, cdi_lock_name, cdi_spec_name, cdi_version

__all__ = ["CdiSpecs", "spec_of"]

#: A CDI spec the publisher writes is about 1 KiB; a larger one is no publisher's.
_SPEC_LIMIT: Final = 1 << 20
_BELONGS: Final = "the request's CDI spec"


def spec_of(driver: str, device_name: str, host_path: str, container_path: str) -> dict[str, Any]:
    """The CDI spec of one metadata file, as a dict."""
    mount = {"hostPath": host_path, "containerPath": container_path, "options": ["ro", "bind"]}
    return {
        "cdiVersion": cdi_version(device_name),
        "kind": f"{driver}/{CDI_CLASS}",
        "devices": [{"name": device_name, "containerEdits": {"mounts": [mount]}}],
        # Go writes the CDI library's Spec type, whose top-level containerEdits is a
        # struct: omitempty never drops it, so every Go spec ends with it, empty.
        "containerEdits": {},
    }


def spec_bytes(spec: dict[str, Any]) -> bytes:
    """A spec's file content, as Go writes it."""
    return _go_escape(json.dumps(spec, indent=2, ensure_ascii=False)).encode("utf-8")


class CdiSpecs:
    """The CDI directory's part of one claim, for one call (use it as a context manager).

    ``mine(base)`` is the host path this publisher's spec of ``base`` mounts.
    """

    def __init__(
        self, cdi_dir: str, driver: str, claim: ClaimRef, call: Call, *, create: bool
    ) -> None:
        self._driver = driver
        self._claim = claim
        self._call = call
        #: The CDI directory (None: missing, and the call makes nothing).
        self.dir = SafeDir.open_root(cdi_dir, call.label, create=create)
        self.lock: ClaimLock | None = None
        #: What sits at the CDI lock's name and keeps every call from taking it.
        self.in_the_way: InTheWay | None = None

    def __enter__(self) -> CdiSpecs:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.lock is not None:
                self.lock.release()
        finally:
            if self.dir is not None:
                self.dir.close()

    def locked(self, *, create: bool, or_go_on: bool = False) -> bool:
        """Take the claim's CDI lock; False when there is no directory or (not ``create``) lock.

        With ``or_go_on``, a lock no call can take (a directory at its name) is kept in
        :attr:`in_the_way` and the call goes on: only unprepare does, since no call can
        write a spec while that stays there.
        """
        if self.dir is None:
            return False
        self.lock = ClaimLock(
            self.dir, cdi_lock_name(self._driver, self._claim), self._call, "the claim's CDI lock"
        )
        try:
            return self.lock.acquire(create=create)
        except InTheWay as err:
            if not or_go_on:
                raise
            self.in_the_way = err
            return True

    def left(self) -> list[PublishError]:
        """What stays of the CDI lock (read after the block): in the way, or not removable."""
        found: list[PublishError] = [] if self.in_the_way is None else [self.in_the_way]
        if self.lock is not None and self.lock.left is not None:
            found.append(self.lock.left)
        return found

    def name(self, base: str) -> str:
        """The spec file's name."""
        return cdi_spec_name(self._driver, self._claim, base)

    def owner(self, base: str) -> str | None:
        """The file the spec of ``base`` mounts (None: no spec, or not one a publisher wrote)."""
        assert self.dir is not None
        name = self.name(base)
        info = self.dir.lstat(name)
        if info is None or not stat.S_ISREG(info.st_mode) or info.st_size > _SPEC_LIMIT:
            return None
        data = self.dir.read(name, limit=_SPEC_LIMIT)
        return None if data is None else _host_path(data)

    def refuse_foreign(self, base: str, mine: str, plugin_data_dir: str) -> None:
        """Refuse to write the spec of ``base`` when another publisher of the driver wrote it."""
        assert self.dir is not None
        theirs = self.owner(base)
        if theirs is None or _same(theirs, mine):
            return
        path = os.path.join(self.dir.path, self.name(base))
        their_root = theirs.partition(f"{os.sep}{NODE_METADATA_SUBDIR}{os.sep}")[0]
        raise self._call.error(
            f"{path}: written by another publisher of {self._driver}: it mounts {theirs}, not "
            f"{mine}; two publishers of one driver (plugin data directories {their_root} and "
            f"{plugin_data_dir}) share the CDI directory {self.dir.path}: give them one plugin "
            "data directory, or each its own CDI directory",
            path=path,
        )

    def write(self, base: str, spec: dict[str, Any]) -> None:
        """Write the spec of ``base`` (atomically; under the CDI lock)."""
        assert self.dir is not None
        self.dir.replace(self.name(base), spec_bytes(spec), locked=True, belongs=_BELONGS)

    def remove(self, bases: Iterable[str], mine: dict[str, str]) -> list[PublishError]:
        """Remove the specs of ``bases`` that are this publisher's, and their temporaries.

        ``mine`` maps each base to the host path of this publisher's file. Another
        publisher's spec stays (logged); so does a directory with a spec's name,
        named with its fix. The CDI lock goes unless another publisher's spec stays.
        """
        assert self.dir is not None
        left: list[PublishError] = []
        kept = False
        for base in bases:
            name = self.name(base)
            try:
                self.dir.remove_temporary(name)
            except PublishError as err:
                left.append(err)
            theirs = self.owner(base)
            if theirs is not None and not _same(theirs, mine[base]):
                kept = True
                _log_kept(self._call, os.path.join(self.dir.path, name), theirs)
                continue
            try:
                self.dir.clear(name, _BELONGS)
            except PublishError as err:
                left.append(err)
        if self.lock is not None:  # what is left in the way needs no lock: only specs do
            self.lock.remove = not kept
        return left

    def none_left(self, bases: Iterable[str]) -> bool:
        """Whether no spec of ``bases`` is in the directory (a failed call's lock may go)."""
        assert self.dir is not None
        return all(self.dir.lstat(self.name(base)) is None for base in bases)

    def forget_lock_if_unused(self, bases: Iterable[str]) -> None:
        """A failed call: the CDI lock goes if no spec of ``bases`` is there."""
        if self.lock is None or self.dir is None:
            return
        with contextlib.suppress(PublishError):
            self.lock.remove = self.none_left(bases)

    def remove_one(self, base: str) -> None:
        """Remove the spec of ``base`` (the testing kit's remove)."""
        if self.dir is not None:
            self.dir.clear(self.name(base), _BELONGS)


def _host_path(data: bytes) -> str | None:
    """The ``hostPath`` of a metadata CDI spec's one mount (None: not such a spec)."""
    try:
        spec = json.loads(data)
        host_path = spec["devices"][0]["containerEdits"]["mounts"][0]["hostPath"]
    except (ValueError, RecursionError, LookupError, TypeError):
        return None
    return host_path if isinstance(host_path, str) else None


def _same(host_path: str, mine: str) -> bool:
    """Whether a spec mounting ``host_path`` is this publisher's spec (of the file ``mine``)."""
    if os.path.normpath(host_path) == mine:
        return True
    try:  # the same directory reached by another spelling (a link in the configured root)
        return os.path.samefile(os.path.dirname(host_path), os.path.dirname(mine))
    except (OSError, ValueError):
        return False


def _log_kept(call: Call, path: str, host_path: str) -> None:
    # logging loads only when something is logged
    from .._log import logger

    logger().warning(
        "%s: %s: kept: another publisher wrote it (it mounts %s)", call.label, path, host_path
    )
