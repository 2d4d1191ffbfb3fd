"""containerd's configuration for these machines: the CRI suite's and the cluster's.

One containerd (built by ``scripts/build-containerd``) with a root, state directory,
socket and configuration of its own: the CRI suite's (tests/e2e/cri.py) and the
cluster's (:mod:`devtools.cluster`). Its configuration handles what these machines
refuse, each line on purpose:

- **CDI**: always on in containerd v2; ``cdi_spec_dirs`` is the CRI suite's own
  directory, where the tests' publishers write their specs (containerd watches it);
  the cluster's are a node's, ``/etc/cdi`` and ``/var/run/cdi`` (containerd's
  defaults), where drivers built on the kubelet plugin library write by default.
- **network**: pods use the node's network (``NODE`` namespace, as ``hostNetwork``), so
  no CNI plugin is needed; the CNI directories point into the suite's directory, which
  has no configuration, and the streaming server listens on loopback, on a free port.
- **cgroups**: ``cgroupfs`` (no systemd here; ``SystemdCgroup = false``), as podman's
  ``cgroup_manager = "cgroupfs"``; the pods have no cgroup parent, so containerd puts
  each container under ``/k8s.io/<id>`` of every (v1) hierarchy, which the machine allows.
- **OOM score**: the machine refuses a negative ``oom_score_adj`` (containerd gives each
  sandbox -998, and runc then fails with "can't get final child's PID from pipe"):
  ``restrict_oom_score_adj`` keeps scores at containerd's own.
- **hostname**: none is set for a pod on the node's network (the kubelet sets none
  either); runc refuses one without a private UTS namespace.
- **runc's state**: under the suite's state directory (``Root``), not ``/run/containerd``.
- **rlimits**: none raised: containerd's default spec keeps ``RLIMIT_NOFILE`` at 1024,
  under this machine's hard limit (podman's default of 1048576 had to be turned off).
- **seccomp**: runc's default profile from containerd (``RuntimeDefault``), which the
  machine accepts; AppArmor and SELinux are off (the machine has neither).
- **snapshotter**: ``overlayfs`` where an overlay mount works here, else ``native``
  (plain copies); chosen by trying one overlay mount before starting.
- **NRI**, **tracing**, the **btrfs/devmapper/zfs** snapshotters: not started or not
  built (they want sockets and devices of the host). The cluster (devtools/cluster)
  turns NRI on, on a socket of its own, for its NIC driver's ``RunPodSandbox`` hook.

The sandbox image is a local one made of the static ``pause`` binary
(:data:`PAUSE_CONTAINERFILE`, named :data:`PAUSE_IMAGE`), so nothing is pulled.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

#: The sandbox image's name in containerd.
PAUSE_IMAGE = "localhost/dra-metadata-pause:local"
#: The sandbox image: the static pause binary alone (built with podman, imported).
PAUSE_CONTAINERFILE = 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n'


def overlay_works(scratch: Path) -> bool:
    """Whether an overlay mount can be made here (as containerd's overlayfs would)."""
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        parts = {name: Path(tmp, name) for name in ("lower", "upper", "work", "merged")}
        for path in parts.values():
            path.mkdir()
        options = f"lowerdir={parts['lower']},upperdir={parts['upper']},workdir={parts['work']}"
        done = subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", options, str(parts["merged"])],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            return False
        subprocess.run(["umount", str(parts["merged"])], check=True)
        return True


def config_toml(
    base: Path,
    *,
    cdi_dirs: Sequence[Path | str],
    runc: str,
    snapshotter: str,
    nri_socket: Path | None = None,
) -> str:
    """containerd's configuration (see the module's docstring for each part).

    ``cdi_dirs`` are where containerd reads CDI specs, in its order (a later
    directory's spec wins over an earlier one of the same name).

    With ``nri_socket``, NRI is on and listens there (the cluster's NIC driver connects
    to it and hooks ``RunPodSandbox``); else it is off.
    """
    disabled = ["io.containerd.internal.v1.tracing"]
    nri = ""
    if nri_socket is None:
        disabled.insert(0, "io.containerd.nri.v1.nri")
    else:
        nri = f"""
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "{nri_socket}"
  plugin_path = "{base / "nri" / "plugins"}"
  plugin_config_path = "{base / "nri" / "conf.d"}"
"""
    return f"""\
version = 3
root = "{base / "root"}"
state = "{base / "state"}"
disabled_plugins = {json.dumps(disabled)}
{nri}
[grpc]
  address = "{base / "containerd.sock"}"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "{base / "opt"}"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "{snapshotter}"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{PAUSE_IMAGE}"

[plugins."io.containerd.cri.v1.runtime"]
  cdi_spec_dirs = {json.dumps([str(d) for d in cdi_dirs])}
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{base / "cni" / "bin"}"]
    conf_dir = "{base / "cni" / "net.d"}"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        Root = "{base / "runc"}"
        SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""
