"""Files on the node, reached only through directories opened without following links.

The publisher runs as root on a node where whoever creates claims chooses
names, and a local user may plant a link or swap a directory while a call
runs. This module is the layer that keeps such a call inside the directories
it started from:

* a configured root is opened as the operator set it (links in it followed);
  every directory below it is opened with ``O_NOFOLLOW | O_DIRECTORY``
  relative to its parent's descriptor, made 0755 when asked, and re-moded
  only while it is empty and ours;
* every file is created, read, replaced (a temporary ``.<name>.<random>.tmp``,
  or ``.<name>.tmp`` for a caller that holds a lock over the name; fsync,
  rename, fsync of the directory), rewritten in place (behind the fence of
  :mod:`._fence`, so that a reader never sees half of it), re-moded and
  removed relative to its directory's descriptor; a link, a file of another
  kind, a FIFO or a file with a second hard link where a file belongs is
  refused, never written, read or removed through (a replace renames over
  its name, which touches nothing it points to);
* what cannot be replaced or removed where a file of the caller's belongs (a
  directory, an immutable or append-only file) is refused with the command
  that clears it (:meth:`SafeDir.blocked`);
* a directory removes itself only through the parent it was opened from, and
  only while the parent's entry is still the directory it opened.

A :class:`SafeDir` call that fails raises :class:`~dra_metadata.PublishError`
``<what>: <path>: <reason>``: ``<what>`` is what the caller is doing, ``<path>``
the target; when the temporary file is what failed, its name follows the reason.
A name too long for the file system is missing where a call only looks
(nothing of that name can exist) and an error where it writes. :func:`replace_file`,
:func:`rewrite_in_place` and :func:`make_dirs` are the layer's one-call forms,
which the testing kit uses too; :func:`make_dirs` raises the ``OSError`` itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import stat
from typing import Final

from ._errors import PublishError, os_reason
from ._fence import exclusive, release
from ._read import DEFAULT_MAX_SIZE

__all__ = [
    "TEMP_SUFFIX",
    "InTheWay",
    "SafeDir",
    "made",
    "make_dirs",
    "replace_file",
    "rewrite_in_place",
    "temporary_name",
]

#: How a replace's temporary file ends (``.<name>.<random>.tmp``); one left is a killed write's.
TEMP_SUFFIX: Final = ".tmp"
_FILE_MODE: Final = 0o644
_DIR_MODE: Final = 0o755
_FALLOC_FL_KEEP_SIZE: Final = 1
#: ``FS_IOC_GETFLAGS`` and the two flags that stop root from replacing or removing a file.
_FS_IOC_GETFLAGS: Final = 0x80086601
_FS_IMMUTABLE_FL: Final = 0x10
_FS_APPEND_FL: Final = 0x20

_O_DIR: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_O_NOFOLLOW_DIR: Final = _O_DIR | os.O_NOFOLLOW


class InTheWay(PublishError):
    """Something not made by the caller where its file belongs, that it cannot clear itself.

    A directory, or an immutable or append-only file: the message ends with the
    command that clears it (:meth:`SafeDir.blocked`).
    """


def _describe(err: OSError, path: str) -> str:
    """``<path>: <reason>``, naming the target even when a temporary file failed."""
    return f"{path}: {os_reason(err)}"


class SafeDir:
    """An open directory, the path it was reached by, and what the caller is doing.

    Every child is opened relative to it with ``O_NOFOLLOW | O_DIRECTORY``, every
    file created, replaced, read, re-moded and removed relative to it: a link or
    a swapped path can never lead a call outside the directories it started from.
    A failure is a :class:`PublishError` ``<what>: <path>: <reason>``.
    """

    def __init__(
        self, fd: int, path: str, what: str, parent: tuple[SafeDir, str] | None = None
    ) -> None:
        self.fd = fd
        self.path = path
        self.what = what
        #: The directory this one was opened from and its name there (for remove_self).
        self._parent = parent

    def __enter__(self) -> SafeDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the descriptor (safe to call twice)."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def failure(
        self, err: OSError, name: str | None = None, *, temp: str | None = None
    ) -> PublishError:
        """The :class:`PublishError` of ``err`` on ``name`` (this directory when None).

        ``temp``: the temporary file that failed while ``name`` was written, named after the
        reason.
        """
        path = self.path if name is None else os.path.join(self.path, name)
        message = f"{self.what}: {_describe(err, path)}"
        if temp is not None:
            message += f" (its temporary file {os.path.join(self.path, temp)})"
        return PublishError(message, path=path)

    def _refuse(self, name: str, reason: str) -> PublishError:
        path = os.path.join(self.path, name)
        return PublishError(
            f"{self.what}: {path}: {reason}: refused, nothing is written, read or removed "
            f"through it; remove it (rm {shlex.quote(path)}) and try again",
            path=path,
        )

    def blocked(self, name: str, belongs: str) -> InTheWay:
        """The error for what sits at ``name`` and cannot be replaced or removed, with its fix.

        ``belongs`` says what the caller keeps there (``the claim's lock``). A
        directory is removed with ``rm -r``; an immutable or append-only file needs
        ``chattr`` first; anything else, ``rm``.
        """
        path = os.path.join(self.path, name)
        quoted = shlex.quote(path)
        info = self.lstat(name)
        flags = _attribute_flags(self.fd, name) if info is not None else 0
        if info is not None and stat.S_ISDIR(info.st_mode):
            kind, fix = "a directory", f"rm -r {quoted}"
        elif flags & (_FS_IMMUTABLE_FL | _FS_APPEND_FL):
            kind = "an immutable file" if flags & _FS_IMMUTABLE_FL else "an append-only file"
            fix = f"chattr -i -a {quoted} && rm {quoted}"
        else:
            kind, fix = "a file that cannot be removed", f"rm {quoted}"
        return InTheWay(
            f"{self.what}: {path}: {kind} where {belongs} belongs, not made by this publisher: "
            f"remove it ({fix}) and try again",
            path=path,
        )

    def clear(self, name: str, belongs: str) -> bool:
        """Make sure nothing is at ``name``, a name only the caller writes; True if one was removed.

        A file of any kind (a link, a FIFO, a second name of another file) is
        removed: unlinking a name touches nothing it points to. A directory, or a
        file that cannot be removed, raises :meth:`blocked`.
        """
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            return False
        except OSError as err:
            if err.errno in (errno.EISDIR, errno.EPERM):  # a directory; chattr +i or +a
                raise self.blocked(name, belongs) from err
            if err.errno == errno.ENAMETOOLONG:
                return False
            raise self.failure(err, name) from err
        return True

    @classmethod
    def open_root(cls, root: str, what: str, *, create: bool) -> SafeDir | None:
        """One of the configured roots (links in it followed, as the operator set them)."""
        try:
            try:
                fd = os.open(root, _O_DIR)
            except FileNotFoundError:
                if not create:
                    return None
                make_dirs(root)
                fd = os.open(root, _O_DIR)
        except OSError as err:
            raise PublishError(f"{what}: {_describe(err, root)}", path=root) from err
        return cls(fd, root, what)

    def child(self, name: str, *, create: bool, strict: bool = True) -> SafeDir | None:
        """The subdirectory ``name`` (made 0755 when missing and ``create``), or None.

        A link or another kind of file where the directory belongs is refused
        (``strict``), or is None (not ``strict``).
        """
        try:
            fd = _open_dir_at(self.fd, name, create=create)
        except NotADirectoryError as err:
            if not strict:
                return None
            raise self._refuse(name, "not a directory (a link or another file)") from err
        except OSError as err:
            raise self.failure(err, name) from err
        if fd is None:
            return None
        return SafeDir(fd, os.path.join(self.path, name), self.what, (self, name))

    def names(self) -> list[str]:
        """The names in the directory, sorted."""
        try:
            return sorted(os.listdir(self.fd))
        except OSError as err:
            raise self.failure(err) from err

    def lstat(self, name: str) -> os.stat_result | None:
        """``name``'s own status (a link not followed), or None when missing."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as err:
            if err.errno == errno.ENAMETOOLONG:
                return None  # nothing of that name can exist

            raise self.failure(err, name) from err

    def _check_target(self, name: str, info: os.stat_result | None) -> None:
        if info is None:
            return
        if not stat.S_ISREG(info.st_mode):
            raise self._refuse(name, "not a regular file (a link, directory or device)")
        if info.st_nlink > 1:
            raise self._refuse(name, f"a file with {info.st_nlink} links (a hard link)")

    def open_file(
        self, name: str, flags: int, mode: int = _FILE_MODE, *, belongs: str = "a file"
    ) -> int:
        """Open a regular file with one link, never through a link, never blocking on a FIFO.

        A directory at ``name`` is :meth:`blocked` (``belongs``: what the caller keeps there).
        """
        try:
            fd = os.open(
                name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=self.fd
            )
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise self._refuse(name, "a link") from err
            if err.errno == errno.ENXIO:
                raise self._refuse(name, "not a regular file (a FIFO or a socket)") from err
            if err.errno == errno.EISDIR:
                raise self.blocked(name, belongs) from err
            raise self.failure(err, name) from err
        try:
            self._check_target(name, os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
        return fd

    def same_file(self, name: str, fd: int) -> bool:
        """Whether ``name`` is still the file open as ``fd``."""
        info = self.lstat(name)
        mine = os.fstat(fd)
        return info is not None and (info.st_dev, info.st_ino) == (mine.st_dev, mine.st_ino)

    def read(self, name: str, *, limit: int = DEFAULT_MAX_SIZE) -> bytes | None:
        """The bytes of the regular file ``name`` (None when missing), up to ``limit`` bytes.

        ``limit`` defaults to the readers' limit; a larger file is refused.
        """
        try:
            fd = self.open_file(name, os.O_RDONLY)
        except PublishError as err:
            cause = err.__cause__
            if isinstance(cause, FileNotFoundError) or (
                isinstance(cause, OSError) and cause.errno == errno.ENAMETOOLONG
            ):
                return None
            raise
        try:
            chunks: list[bytes] = []
            size = 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
                size += len(chunk)
        except OSError as err:
            raise self.failure(err, name) from err
        finally:
            os.close(fd)
        whose = "the readers' limit" if limit == DEFAULT_MAX_SIZE else "the limit"
        raise self._refuse(name, f"larger than {whose} of {limit} bytes")

    def replace(
        self,
        name: str,
        data: bytes,
        *,
        mode: int = _FILE_MODE,
        locked: bool = False,
        belongs: str = "a file",
    ) -> None:
        """Replace ``name`` atomically: write a temporary file, fsync it, rename it over ``name``.

        The temporary is ``.<name>.<random>.tmp``; with ``locked`` (the caller holds a
        lock that serialises every writer of ``name``) it is ``.<name>.tmp``, and what a
        killed write (or anyone) left there is cleared first (:meth:`clear`): no listing
        of the directory is needed. Whatever file is at ``name`` is replaced (the rename
        touches nothing a link there points to); a directory, or an immutable or
        append-only file, is refused with its fix (:meth:`blocked`; ``belongs`` says
        what the caller keeps at ``name``).
        """
        temp = temporary_name(name) if locked else f".{name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
        fd = self._create_temporary(name, temp, mode, cleared=locked)
        try:  # from here the temporary is ours: any failure removes it
            try:
                _write_all(fd, data)
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            self._drop(temp)
            raise self.failure(err, name, temp=temp) from err
        except BaseException:
            self._drop(temp)
            raise
        try:
            os.replace(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError as err:
            self._drop(temp)
            if err.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST, errno.EPERM):
                raise self.blocked(name, belongs) from err
            raise self.failure(err, name) from err
        except BaseException:
            self._drop(temp)
            raise
        try:
            os.fsync(self.fd)
        except OSError as err:
            raise self.failure(err) from err

    def _create_temporary(self, name: str, temp: str, mode: int, *, cleared: bool) -> int:
        """Create ``temp`` (``O_EXCL``); with ``cleared``, what is there is cleared first."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            try:
                return os.open(temp, flags, mode, dir_fd=self.fd)
            except FileExistsError:
                if not cleared:
                    raise
            self.clear(temp, f"the temporary file of {name}")
            return os.open(temp, flags, mode, dir_fd=self.fd)
        except OSError as err:
            raise self.failure(err, name, temp=temp) from err

    def _drop(self, temp: str) -> None:
        """Remove a temporary this call made (a failed write's)."""
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=self.fd)

    def rewrite(self, name: str, data: bytes, *, belongs: str = "a file") -> None:
        """Truncate ``name`` (created if missing, mode 0644) and write ``data`` into the same inode.

        Room for ``data`` is reserved first where the file system can (``fallocate``
        keeping the size): a full disk fails the write before the old content is
        truncated. From the truncate to the last byte the writer's fence is held
        (:func:`~._fence.exclusive`, waited for at most
        :data:`~._fence.WRITER_WAIT`): readers that take the fence, as every
        reader of this package does, never see the file half written.
        """
        fd = self.open_file(name, os.O_WRONLY | os.O_CREAT, belongs=belongs)
        try:
            # The fence (_fence): no reader that takes its read lock sees the file between
            # the truncate and the last byte. Let go before the fsync and the close.
            fenced = exclusive(fd)
            try:
                _reserve(fd, len(data))
                os.ftruncate(fd, 0)
                os.fchmod(fd, _FILE_MODE)
                _write_all(fd, data)
            finally:
                if fenced:
                    release(fd)
            os.fsync(fd)
        except OSError as err:
            raise self.failure(err, name) from err
        finally:
            os.close(fd)

    def unlink_regular(self, name: str) -> bool:
        """Remove ``name`` if it is a regular file with one link; True if removed."""
        info = self.lstat(name)
        if info is None or not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            return False
        self.unlink(name)
        return True

    def unlink(self, name: str) -> None:
        """Remove the file ``name`` (gone already is fine)."""
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass
        except OSError as err:
            raise self.failure(err, name) from err

    def rmdir(self, name: str) -> None:
        """Remove the empty directory ``name`` (gone already is fine)."""
        try:
            os.rmdir(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass
        except OSError as err:
            raise self.failure(err, name) from err

    def remove_self(self) -> None:
        """Remove this directory, when empty, through the parent it was opened from (still open)."""
        if self._parent is None or self._parent[0].fd < 0:
            return
        parent_fd, name = self._parent[0].fd, self._parent[1]
        info = self.lstat(".")
        try:
            here = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if info is None or (here.st_dev, here.st_ino) != (info.st_dev, info.st_ino):
            return  # moved away since it was opened: not ours to remove there
        try:
            os.rmdir(name, dir_fd=parent_fd)
        except (FileNotFoundError, OSError) as err:
            if err.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                raise self.failure(err) from err

    def remove_temporary(self, name: str) -> None:
        """Remove ``.<name>.tmp``, what a killed locked :meth:`replace` left (no listing).

        A directory there, or a file that cannot be removed, raises :meth:`blocked`.
        """
        self.clear(temporary_name(name), f"the temporary file of {name}")

    def remove_temporaries(self, name: str) -> None:
        """Remove the temporaries ``.<name>.<random>.tmp`` and ``.<name>.tmp`` writes left."""
        prefix = f".{name}."
        for entry in self.names():
            if entry.startswith(prefix) and entry.endswith(TEMP_SUFFIX):
                self.unlink_regular(entry)


def temporary_name(name: str) -> str:
    """The temporary of a locked :meth:`SafeDir.replace` of ``name``: ``.<name>.tmp``."""
    return f".{name}{TEMP_SUFFIX}"


def made(directory: SafeDir | None) -> SafeDir:
    """A directory opened with ``create=True`` (never None)."""
    assert directory is not None
    return directory


def _open_dir_at(parent: int, name: str, *, create: bool) -> int | None:
    """``openat(parent, name, O_NOFOLLOW|O_DIRECTORY)``, made 0755 first if missing and ``create``.

    ``NotADirectoryError`` for a link or another file there; None when missing
    and not ``create``. A directory made here is re-moded through its descriptor,
    and only while it is empty and ours: a directory swapped in is never touched.
    """
    created = False
    fd = _open_dir_nofollow(parent, name, create=create)
    if fd is None:
        if not create:
            return None
        try:
            os.mkdir(name, _DIR_MODE, dir_fd=parent)
            created = True
        except FileExistsError:
            pass
        fd = _open_dir_nofollow(parent, name, create=True)
        if fd is None:  # removed again at once: the caller's error
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    if created:
        try:
            info = os.fstat(fd)
            if (
                stat.S_IMODE(info.st_mode) != _DIR_MODE
                and info.st_uid == os.geteuid()
                and not os.listdir(fd)
            ):
                os.fchmod(fd, _DIR_MODE)
        except BaseException:
            os.close(fd)
            raise
    return fd


def _open_dir_nofollow(parent: int, name: str, *, create: bool) -> int | None:
    """``openat(parent, name, O_NOFOLLOW|O_DIRECTORY)``; None when missing."""
    try:
        return os.open(name, _O_NOFOLLOW_DIR, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG and not create:
            return None  # nothing of that name can exist
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotADirectoryError(err.errno, os.strerror(err.errno), name) from err
        raise


def _attribute_flags(directory: int, name: str) -> int:
    """The inode flags (``chattr``) of the file ``name``, 0 where they cannot be read."""
    # fcntl: only where a lock is let go (a read that took none never needs it)
    import fcntl

    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory
        )
    except OSError:
        return 0
    try:
        buffer = fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(8))
    except OSError:
        return 0
    finally:
        os.close(fd)
    return int.from_bytes(buffer[:4], "little")


def make_dirs(directory: str | os.PathLike[str]) -> None:
    """Create ``directory`` and its missing parents, each mode 0755 whatever the umask.

    The nearest existing ancestor is opened as it is (links followed: it is the
    caller's); below it, each directory is made and opened relative to its
    parent without following links, so a link planted or swapped in on the way
    is an error (``NotADirectoryError``), never followed.
    """
    current = os.path.abspath(os.fspath(directory))
    missing: list[str] = []
    while not os.path.exists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        missing.append(os.path.basename(current))
        current = parent
    fd = os.open(current, _O_DIR)
    try:
        for name in reversed(missing):
            child = _open_dir_at(fd, name, create=True)
            assert child is not None  # created
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def _parent_dir(path: str | os.PathLike[str], what: str) -> tuple[SafeDir, str]:
    target = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(target)
    try:
        fd = os.open(directory, _O_DIR)
    except OSError as err:
        err.filename = target
        raise
    return SafeDir(fd, directory, what), name


def replace_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a reader sees the old file or the new, whole.

    A temporary file in the same directory (``.<name>.<random>.tmp``) gets the
    data, mode 0644, and an fsync; it is renamed over ``path``; the directory is
    fsynced so the rename survives a crash. On any failure the temporary file is
    removed and the old file is untouched. A link, a directory or a file with
    more than one link at ``path`` is refused (:class:`PublishError`).
    """
    directory, name = _parent_dir(path, "write file")
    with directory:
        directory._check_target(name, directory.lstat(name))
        directory.replace(name, data)


def rewrite_in_place(path: str | os.PathLike[str], data: bytes) -> None:
    """Truncate ``path`` (created if missing, mode 0644) and write ``data`` into the same inode.

    What Go's ``os.WriteFile`` does, behind the fence (:mod:`._fence`): a bind
    mount of the file shows the new content at once, and a reader that takes
    the fence (every reader of this package) never sees it empty or half
    written; one that does not can. A link, a file of another kind, or one
    with more than one link is refused (:class:`PublishError`), never written through.
    """
    directory, name = _parent_dir(path, "write file")
    with directory:
        directory.rewrite(name, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _reserve(fd: int, size: int) -> None:
    """Reserve ``size`` bytes of room for ``fd`` without changing its size, where supported."""
    if size == 0:
        return
    # ctypes (several ms): only to reserve a file's space
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fallocate = libc.fallocate
    fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    if fallocate(fd, _FALLOC_FL_KEEP_SIZE, 0, size) != 0:
        code = ctypes.get_errno()
        if code not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise OSError(code, os.strerror(code))
