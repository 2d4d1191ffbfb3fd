"""podman on these machines: its settings, and the Debian root file system images start from.

The end-to-end suites (tests/e2e) and the cluster (:mod:`devtools.cluster`) both build
this checkout's image with ``scripts/build-image`` on a Debian bookworm base made here
by ``mmdebstrap`` and ``podman import``, with podman run under :data:`CONTAINERS_CONF`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: The host's Debian sources, handed to mmdebstrap (it reads stdin without a mirror).
APT_SOURCES = "/etc/apt/sources.list.d/debian.sources"
#: podman's settings for these machines: no raised rlimits, cgroupfs, runc.
CONTAINERS_CONF = """\
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
"""


def debian_rootfs(target: Path) -> None:
    """A Debian bookworm root file system with python3 and its venv module, as a tar file.

    Made by mmdebstrap, without documentation, manual pages or translations (smaller,
    as slim images are); the host's Debian sources are its mirror when it has them.
    A RuntimeError, with the end of what mmdebstrap printed, if it fails.
    """
    mirror = [APT_SOURCES] if os.path.exists(APT_SOURCES) else []
    command = [
        "mmdebstrap", "--variant=minbase", "--include=python3,python3-venv",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=path-exclude=/usr/share/info/*",
        "bookworm", str(target), *mirror,
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"mmdebstrap: exit {done.returncode}\n{done.stderr[-3000:]}")
