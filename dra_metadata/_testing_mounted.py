"""The testing kit's mounted tree: files on a fake node, seen through real read-only bind mounts.

:class:`MountedMetadataTree` is a :class:`~._testing_tree.MetadataTree` whose
files a :class:`~dra_metadata.MetadataPublisher` writes in the kubelet plugin's
node layout, each mounted into the container root as its CDI spec says, as a
container engine mounts it. :func:`check_mounts_possible` tells whether such
mounts can be made here, :class:`MountUnavailableError` why not. The public face
is :mod:`dra_metadata.testing`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from ._encode import DEFAULT_VERSIONS
from ._paths import CONTAINER_DIR, check_name
from ._publish import ClaimRef, MetadataPublisher
from ._testing_tree import (
    ClaimBuilder,
    MetadataTree,
    RequestBuilder,
    WriteMode,
    _FileKey,
    _prune,
    _Target,
    make_dirs,
)

__all__ = ["MountUnavailableError", "MountedMetadataTree", "check_mounts_possible"]

#: The mode of a mount target the tree creates, as of every file it writes.
_FILE_MODE: Final = 0o644


class MountUnavailableError(RuntimeError):
    """Bind mounts cannot be made here (not root, no ``mount``, or the kernel refused).

    ``reason`` says why, in a form fit for ``pytest.skip(err.reason)``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- real read-only single-file bind mounts ----------------------------------------------


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, check=False)


def _mount_bind(host: Path, target: Path, *, read_only: bool = True) -> None:
    """Bind-mount the file ``host`` on ``target``, then (by default) make that mount read-only."""
    done = _run("mount", "--bind", str(host), str(target))
    if done.returncode != 0:
        raise MountUnavailableError(
            f"mount --bind {host} {target} refused: {done.stderr.strip() or done.returncode}"
        )
    if not read_only:
        return
    done = _run("mount", "-o", "remount,ro,bind", str(target))
    if done.returncode != 0:
        _unmount(target)
        raise MountUnavailableError(
            f"mount -o remount,ro,bind {target} refused: {done.stderr.strip() or done.returncode}"
        )


def _unmount(target: Path) -> None:
    done = _run("umount", str(target))
    if done.returncode != 0:
        lazy = _run("umount", "-l", str(target))
        if lazy.returncode != 0:
            raise OSError(f"umount {target} failed: {done.stderr.strip()}")


def check_mounts_possible(scratch: str | os.PathLike[str]) -> None:
    """Raise :class:`MountUnavailableError` unless a read-only file bind mount works here.

    Tries one mount of a scratch file inside the directory ``scratch`` and undoes it.
    """
    if not sys.platform.startswith("linux"):
        raise MountUnavailableError(f"single-file bind mounts need Linux, not {sys.platform}")
    if os.geteuid() != 0:
        raise MountUnavailableError(f"bind mounts need root (running as uid {os.geteuid()})")
    for tool in ("mount", "umount"):
        if shutil.which(tool) is None:
            raise MountUnavailableError(f"{tool}(8) is not installed")
    make_dirs(Path(scratch))
    with tempfile.TemporaryDirectory(prefix=".mount-probe-", dir=scratch) as probe:
        host, target = Path(probe, "host"), Path(probe, "target")
        host.write_bytes(b"probe")
        target.touch()
        _mount_bind(host, target)
        try:
            try:
                with open(target, "r+b"):
                    pass
            except OSError:
                pass  # read-only, as wanted
            else:
                raise MountUnavailableError("a read-only bind mount stayed writable here")
        finally:
            _unmount(target)


class MountedMetadataTree(MetadataTree):
    """A tree written on the "node", seen from a "container" through read-only bind mounts.

    Each driver's files are written by a :class:`~dra_metadata.MetadataPublisher`
    (:meth:`publisher`) whose plugin data directory is ``<host_dir>/<driver>``
    (``host_dir`` plays ``/var/lib/kubelet/plugins``):
    ``<host_dir>/<driver>/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json``,
    with its CDI spec in ``cdi_dir`` (default ``<host_dir>/cdi``, playing
    ``/var/run/cdi``). The first write of a file applies its CDI spec's mount as a
    container engine does, with ``container_root`` playing
    ``/var/run/kubernetes.io/dra-device-attributes``: a bind mount of the node file,
    made read-only. So, as in a real container: in-place updates show through, an
    update by rename does not (the mount keeps the old inode and ``st_nlink``
    becomes 0) until :meth:`remount`, which plays a container started after the update.

    Needs root and ``mount(8)``: the constructor tries one mount and raises
    :class:`MountUnavailableError` (with a ``reason``) where that is refused.
    :meth:`close` (or leaving the ``with`` block) unmounts everything.
    """

    def __init__(
        self,
        host_dir: str | os.PathLike[str],
        container_root: str | os.PathLike[str],
        *,
        cdi_dir: str | os.PathLike[str] | None = None,
        versions: Iterable[str] = DEFAULT_VERSIONS,
        mode: WriteMode = "rename",
    ) -> None:
        super().__init__(container_root, versions=versions, mode=mode)
        self.host_dir: Final = Path(host_dir)
        #: Where the CDI specs of the files are written (``/var/run/cdi`` on a node).
        self.cdi_dir: Final = self.host_dir / "cdi" if cdi_dir is None else Path(cdi_dir)
        self._publishers: dict[str, MetadataPublisher] = {}
        self._mounts: dict[_FileKey, Path] = {}  # the live files' mounts
        self._stack: list[Path] = []  # every mount made and not undone, in order
        check_mounts_possible(self.host_dir)

    def publisher(self, driver: str) -> MetadataPublisher:
        """The publisher that writes ``driver``'s node files and CDI specs for this tree.

        Its plugin data directory is ``<host_dir>/<driver>``, its CDI directory
        :attr:`cdi_dir`. A test can call it directly (its :meth:`~dra_metadata.
        MetadataPublisher.cdi_spec_path`, say) to see what a driver would write.
        """
        found = self._publishers.get(driver)
        if found is None:
            check_name("driver", driver)
            if (self.host_dir / driver).resolve() == self.cdi_dir.resolve():
                raise ValueError(f"driver {driver!r} would write into the CDI directory")
            found = MetadataPublisher(
                driver, plugin_data_dir=self.host_dir / driver, cdi_dir=self.cdi_dir
            )
            self._publishers[driver] = found
        return found

    @staticmethod
    def _claim_ref(claim: ClaimBuilder) -> ClaimRef:
        return ClaimRef(
            name=claim.name,
            namespace=claim.namespace,
            uid=claim.uid,
            pod_claim_name=claim.pod_claim_name,
        )

    def _host_path_of(self, key: _FileKey) -> Path:
        """The node-side file of ``key``, in the kubelet plugin's layout (internal)."""
        pub = self.publisher(key.driver)
        return Path(pub.metadata_path(self._claim_ref(key.claim), key.base))

    @property
    def mounted(self) -> tuple[Path, ...]:
        """The container paths that are bind mounts right now, in the order mounted."""
        return tuple(self._stack)

    def _put(self, key: _FileKey, data: bytes, mode: WriteMode) -> None:
        pub, claim = self.publisher(key.driver), self._claim_ref(key.claim)
        pub.write_bytes(claim, key.base, data, mode="in-place" if mode == "in-place" else "replace")
        if key not in self._mounts:
            self._mount(key)

    def _spec_mount(self, key: _FileKey) -> tuple[Path, Path, list[str]]:
        """The host file, container path (under :attr:`root`) and options of ``key``'s CDI mount."""
        pub = self.publisher(key.driver)
        with open(pub.cdi_spec_path(self._claim_ref(key.claim), key.base), "rb") as spec_file:
            spec = json.load(spec_file)
        ((device,),) = [spec["devices"]]
        ((mount,),) = [device["containerEdits"]["mounts"]]
        inside = os.path.relpath(mount["containerPath"], CONTAINER_DIR)
        target = self.root / inside
        if inside.startswith("..") or target != self._path_of(key):
            raise RuntimeError(  # pragma: no cover - the layouts of _paths and _publish differ
                f"the CDI spec mounts {mount['containerPath']}, the readers expect {target}"
            )
        return Path(mount["hostPath"]), target, list(mount.get("options", []))

    def _mount(self, key: _FileKey) -> None:
        host, target, options = self._spec_mount(key)
        while target in self._stack:
            # A view kept by remove(unmount=False): a new pod does not see it (and the
            # kernel refuses to mount on a deleted file), so it goes first.
            self._stack.remove(target)
            _unmount(target)
        make_dirs(target.parent)
        if not target.exists():
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, _FILE_MODE)
            os.close(fd)
        _mount_bind(host, target, read_only="ro" in options)
        self._mounts[key] = target
        self._stack.append(target)

    def _unmount(self, key: _FileKey) -> Path:
        target = self._mounts.pop(key)
        _unmount(target)
        # The top mount on a path is the one made last.
        del self._stack[len(self._stack) - 1 - self._stack[::-1].index(target)]
        return target

    def remount(self, *what: _Target) -> list[Path]:
        """Mount the current node files again, as a container started now would see them.

        Without arguments, every mounted file; returns the container paths.
        """
        if what:
            keys = [k for target in what for k in self._keys_of(target) if k in self._mounts]
        else:
            keys = [key for key in self._mounts if key in self._files]
        for key in keys:
            self._unmount(key)
            self._mount(key)
        return [self._path_of(key) for key in keys]

    def remove(self, what: ClaimBuilder | RequestBuilder, *, unmount: bool = True) -> list[Path]:
        """Delete the node files as unprepare does; by default also end the container's view.

        With ``unmount=True`` the container paths are unmounted and deleted (the
        pod is gone). With ``unmount=False`` they stay mounted and keep showing
        the deleted files' last content, as in a container that still runs, until
        :meth:`close` or until a claim of the same name writes there again.
        """
        keys = [key for key in self._keys_of_any(what) if key in self._files]
        for key in keys:
            if key not in self._mounts:
                continue
            if not unmount:
                del self._mounts[key]  # stays in the stack: close() undoes it
                continue
            target = self._unmount(key)
            if target not in self._stack:
                target.unlink(missing_ok=True)
                _prune(target.parent, self.root)
        return super().remove(what)

    def _delete(self, key: _FileKey) -> None:
        # The request's file, its directory and CDI spec; the claim's directory when empty.
        self.publisher(key.driver).remove_request(self._claim_ref(key.claim), key.base)

    def close(self) -> None:
        """Unmount every container path (the files stay). Safe to call more than once."""
        failures = []
        self._mounts.clear()
        while self._stack:
            try:
                _unmount(self._stack.pop())
            except OSError as err:
                failures.append(str(err))
        if failures:
            raise OSError("; ".join(failures))
