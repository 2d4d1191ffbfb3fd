"""The machine as /proc and /sys show it: the cluster's processes, mounts and cgroups.

``up`` records each process it starts with its start time (:class:`Recorded`), so that
``down`` stops only those, even after their PIDs were reused; ``down`` unmounts what is
mounted below the state directory (:func:`mounts_below`), removes the cgroups the
kubelet made and the fixed paths that were not there before (:data:`FIXED_PATHS`); the
cluster suite's last test compares :func:`machine_snapshot` after ``down`` with the one
``up`` took.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from devtools.cluster.settings import REPO, ClusterError

#: Paths the kubelet and containerd use whatever their configuration; ``down`` removes
#: those that did not exist before ``up`` (shared ones only when empty).
FIXED_PATHS = (
    "/var/run/cdi",
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet",
    "/var/log/containers",
    "/var/log/pods",
    "/run/containerd/s",
    "/run/containerd",
)
#: cgroups the kubelet makes below each v1 hierarchy (cgroupfs driver).
CGROUP_NAMES = ("kubepods",)


def start_time(pid: int) -> str | None:
    """The process's start time (``/proc/PID/stat`` field 22), or None if it is gone
    (or a zombie: ended, not yet reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


@dataclass(frozen=True)
class Recorded:
    """A process ``up`` started: its PID and start time (so a reused PID is not ours)."""

    name: str
    pid: int
    started: str

    def alive(self) -> bool:
        return start_time(self.pid) == self.started

    def rss_kib(self) -> int:
        """Resident memory of the process and its descendants, in KiB."""
        return sum(rss_kib(pid) for pid in [self.pid, *descendants(self.pid)])


def rss_kib(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def children_map() -> dict[int, list[int]]:
    """Each process's children, from /proc."""
    found: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                parent = int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])
                found.setdefault(parent, []).append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``."""
    tree = children_map()
    out, todo = [], list(tree.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(tree.get(child, []))
    return out


def processes_naming(text: str) -> list[int]:
    """The processes whose command line contains ``text`` (a path only ours use)."""
    needle = text.encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
    return found


def stop_process(pid: int, started: str | None, *, grace: float = 20) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; only if it is still the same process."""
    if started is None or start_time(pid) != started:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while start_time(pid) == started:
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            grace = -1
        time.sleep(0.1)
        if grace < 0 and time.monotonic() > deadline + 10:
            raise ClusterError(f"process {pid} did not end after SIGKILL")


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: Where others' containers and tests mount and run while the cluster is up (podman's
#: storage, pytest's temporary directories): not the cluster's, left out of snapshots.
OTHERS = ("/tmp/", "/var/lib/containers/", "/run/containers/", "/run/user/")


def machine_snapshot(state: Path) -> dict[str, list[str]]:
    """What the cluster could leave behind: mount points (but others'), the processes
    that run the cluster's binaries, name its state or sit in the kubelet's cgroups,
    and which fixed paths, cgroups and the state directory exist."""
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        points = {line.split()[4] for line in table}
    mounts = sorted(p for p in points if not p.startswith(OTHERS))
    ours = (str(state), str(REPO / "build" / "cri"), "dra-metadata/cluster")
    processes = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            cgroups = Path(f"/proc/{entry}/cgroup").read_text()
            if any(text in cmdline for text in ours) or "/kubepods" in cgroups:
                processes.append(cmdline.strip())
    paths = [p for p in (*FIXED_PATHS, str(state)) if os.path.lexists(p)]
    paths += [
        str(h / name) for h in cgroup_hierarchies() for name in CGROUP_NAMES if (h / name).exists()
    ]
    return {"mounts": mounts, "processes": sorted(processes), "paths": sorted(paths)}


def mounts_below(path: Path) -> list[str]:
    """Mount points at or below ``path`` (the kubelet bind-mounts its root on itself)."""
    prefix = str(path)
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        points = [line.split()[4] for line in table]
    return [p for p in points if p == prefix or p.startswith(prefix + "/")]


def mounts_from(source: Path) -> list[str]:
    """Mount points whose root is ``source`` on its file system: its bind mounts."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            fields = line.split()
            root, point = fields[3], fields[4]
            if root != "/" and (str(source) == root or str(source).endswith(root)):
                found.append(point)
    return found


def cgroup_hierarchies() -> list[Path]:
    """The v1 hierarchies (``/sys/fs/cgroup/<controller>``), or the v2 root."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())


def remove_cgroup(top: Path) -> None:
    """Remove a cgroup and every cgroup below it, deepest first (they must have no tasks)."""
    for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            path.rmdir()
    with contextlib.suppress(OSError):
        top.rmdir()
