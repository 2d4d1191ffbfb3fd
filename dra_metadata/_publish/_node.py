"""The claim's files under the plugin data directory, for one call: each directory opened once.

::

    <plugin data dir>/
        dra-metadata-publisher/<stem>.lock, <stem>.state     (the lock and the state)
        dra-device-metadata/<namespace>_<claim>/<base request>/metadata.json

A :class:`NodeFiles` opens the plugin data directory once for the call, and each
directory below it at most once (:class:`~.._safedir.SafeDir`: never through a
link), keeping it open until the call ends; a directory that is missing is made
only when the call writes. It reads a request's previous file, writes it (an
atomic replace, or a rewrite of the same inode behind the fence), and removes
the claim: every file of its own it finds, naming what it could not remove with
the command that does.
"""

from __future__ import annotations

import os
import shlex
import stat
from typing import Final, Literal

from .._errors import DecodeError, PublishError
from .._paths import NODE_METADATA_FILE, NODE_METADATA_SUBDIR
from .._read import decode_file
from .._safedir import TEMP_SUFFIX, SafeDir
from ._call import Call
from ._names import PUBLISHER_STATE_SUBDIR, ClaimRef, is_label
from ._state import ClaimState

__all__ = ["NodeFiles"]

_BELONGS: Final = "the request's metadata file"


class _Undecodable(DecodeError, PublishError):
    """A metadata file whose generation is needed and that does not decode (both error kinds)."""


class NodeFiles:
    """The plugin data directory's part of one claim, for one call (close it at the end)."""

    def __init__(self, plugin_data_dir: str, claim: ClaimRef, call: Call) -> None:
        self._claim = claim
        #: The call this is part of.
        self.call = call
        self._plugin_data_dir = plugin_data_dir
        self._opened: list[SafeDir] = []
        self._dirs: dict[str, SafeDir | None] = {}
        #: The plugin data directory (None: it does not exist; :meth:`make_root` makes it).
        self.root = self._open_root(create=False)

    def _open_root(self, *, create: bool) -> SafeDir | None:
        root = SafeDir.open_root(self._plugin_data_dir, self.call.label, create=create)
        if root is not None:
            self._opened.append(root)
        return root

    def make_root(self) -> SafeDir:
        """The plugin data directory, made (0755, with its parents) if missing."""
        if self.root is None:
            self.root = self._open_root(create=True)
            assert self.root is not None  # created
        return self.root

    def close(self) -> None:
        """Close every directory the call opened, the deepest first."""
        while self._opened:
            self._opened.pop().close()

    def __enter__(self) -> NodeFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _child(self, key: str, parent: SafeDir | None, name: str, create: bool) -> SafeDir | None:
        """The directory ``name`` in ``parent``, opened once per call (``key`` names it)."""
        found = self._dirs.get(key)
        if found is not None or parent is None:
            return found
        if key in self._dirs and not create:
            return None  # looked for already, and missing
        found = parent.child(name, create=create)
        self._dirs[key] = found
        if found is not None:
            self._opened.append(found)
        return found

    def own_dir(self, *, create: bool) -> SafeDir | None:
        """``dra-metadata-publisher``: the claim's lock and state."""
        return self._child("own", self.root, PUBLISHER_STATE_SUBDIR, create)

    def has_own(self, name: str) -> bool:
        """Whether anything is at ``name`` in the publisher's directory."""
        own = self.own_dir(create=False)
        return own is not None and own.lstat(name) is not None

    def claim_dir(self, *, create: bool) -> SafeDir | None:
        """``dra-device-metadata/<namespace>_<claim>``."""
        top = self._child("top", self.root, NODE_METADATA_SUBDIR, create)
        return self._child("claim", top, self._claim.directory, create)

    def request_dir(self, base: str, *, create: bool) -> SafeDir | None:
        """``<claim dir>/<base>``."""
        return self._child(f"request/{base}", self.claim_dir(create=create), base, create)

    # --- one request ------------------------------------------------------------------------

    def has_file(self, base: str) -> bool:
        """Whether ``base``'s file exists (of any kind)."""
        found = self.request_dir(base, create=False)
        return found is not None and found.lstat(NODE_METADATA_FILE) is not None

    def previous(self, base: str) -> bytes | None:
        """The bytes of ``base``'s file, if it is one regular file of ours (None otherwise).

        A link, a FIFO, a directory or a second name of another file is not read:
        it is no file the publisher wrote, and the next write replaces it (or says
        how to clear it). One over the readers' size limit is an error.
        """
        found = self.request_dir(base, create=False)
        if found is None:
            return None
        info = found.lstat(NODE_METADATA_FILE)
        if info is None or not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            return None
        return found.read(NODE_METADATA_FILE)

    def highest_generation(
        self, base: str, state: ClaimState, path: str, pod_claim_name: str | None
    ) -> tuple[int, str | None]:
        """The highest generation ``base`` has had, and the podClaimName to keep.

        The higher of the state's and the file's (another writer may have gone
        further); ``path`` is the file's, for messages, ``pod_claim_name`` the
        claim's, kept when neither says another. With the state's, a file that cannot
        be read or decoded (over the size limit, torn) is left aside: the next write
        replaces it. Without, such a file is an error that says how to go on (a
        :class:`DecodeError`, also a :class:`PublishError`, when it does not decode).
        """
        recorded = state.requests.get(base)
        if recorded is None and state.problem is not None:
            # logging loads only when something is logged
            from .._log import logger

            logger().warning(
                "%s: %s: %s; the generations are taken from the metadata files",
                self.call.label,
                state.path,
                state.problem,
            )
        try:
            found = self.previous(base)
            previous = None if found is None else decode_file(path, found)
        except DecodeError as err:
            if recorded is not None:
                return recorded
            why = state.problem or "and the publisher's state has no generation for it"
            raise _Undecodable(
                f"{self.call.label}: decode existing metadata: {err}; {why}: the next "
                "generation is unknown; unprepare the claim (or remove the file) to start "
                "again at generation 1",
                path=path,
            ) from None
        except PublishError:
            if recorded is not None:
                return recorded
            raise
        if previous is None:
            return recorded or (0, pod_claim_name)
        generation = previous.metadata.generation
        if recorded is not None:
            return max(recorded[0], generation), recorded[1]
        return generation, previous.pod_claim_name

    def write(self, base: str, data: bytes, mode: Literal["replace", "in-place"]) -> None:
        """Write ``base``'s file, its directories made first."""
        found = self.request_dir(base, create=True)
        assert found is not None  # created
        if mode == "in-place":
            found.rewrite(NODE_METADATA_FILE, data, belongs=_BELONGS)
        else:
            found.replace(NODE_METADATA_FILE, data, locked=True, belongs=_BELONGS)

    def remove_request(self, base: str) -> None:
        """Remove ``base``'s file and directory; the claim's directory when it is left empty."""
        claim_dir = self.claim_dir(create=False)
        found = self.request_dir(base, create=False)
        if claim_dir is None or found is None:
            return
        found.clear(NODE_METADATA_FILE, _BELONGS)
        found.remove_temporary(NODE_METADATA_FILE)
        claim_dir.rmdir(base)
        if not claim_dir.names():
            claim_dir.remove_self()

    # --- the whole claim ----------------------------------------------------------------------

    def bases(self) -> list[str]:
        """The base requests with a directory in the claim's directory."""
        claim_dir = self.claim_dir(create=False)
        if claim_dir is None:
            return []
        return [name for name in claim_dir.names() if is_label(name)]

    def remove_claim(self) -> list[PublishError]:
        """Remove the claim's files and directories; what is left, each error with its fix.

        Removed: each request's ``metadata.json`` (whatever kind of file is there),
        the temporaries of interrupted writes, the request directories and the
        claim's directory. Left: anything else (not written by this publisher), a
        directory where a file belongs, a file that cannot be removed.
        """
        claim_dir = self.claim_dir(create=False)
        if claim_dir is None:
            return []
        left: list[PublishError] = []
        for name in claim_dir.names():
            request_dir = (
                claim_dir.child(name, create=False, strict=False) if is_label(name) else None
            )
            if request_dir is None:
                left.append(_not_ours(claim_dir, name))
                continue
            with request_dir:
                stuck = _remove_request_files(request_dir)
            if stuck:
                left.extend(stuck)
            else:
                claim_dir.rmdir(name)
        if not left:
            claim_dir.remove_self()
        return left


def _remove_request_files(request_dir: SafeDir) -> list[PublishError]:
    """Remove a request directory's file and temporaries; the errors of what stays."""
    left: list[PublishError] = []
    temporary = f".{NODE_METADATA_FILE}."
    for name in request_dir.names():
        is_ours = name == NODE_METADATA_FILE or (
            name.startswith(temporary) and name.endswith(TEMP_SUFFIX)
        )
        if not is_ours:
            left.append(_not_ours(request_dir, name))
            continue
        try:
            request_dir.clear(name, _BELONGS)
        except PublishError as err:
            left.append(err)
    return left


def _not_ours(directory: SafeDir, name: str) -> PublishError:
    path = os.path.join(directory.path, name)
    return PublishError(
        f"{directory.what}: {path}: not written by this publisher: left; remove it "
        f"(rm -r {_quote(path)}) if nothing needs it",
        path=path,
    )


def _quote(path: str) -> str:
    return shlex.quote(path)
