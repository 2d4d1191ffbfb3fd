"""containerd driven over the CRI as the kubelet drives it: the CRI suite's runtime and pods.

:class:`Containerd` is one containerd (built by ``scripts/build-containerd``) with a
root, state directory, socket and configuration of its own; its configuration, and why
each line of it, is :mod:`devtools.containerd`'s (it configures the cluster's too).

The images come from podman (``podman save``) into containerd's ``k8s.io`` namespace
(``ctr images import``), the namespace the CRI reads; the sandbox image is a local one
made of the static ``pause`` binary, so nothing is pulled.

:class:`Pod` does what the kubelet does for one pod: ``RunPodSandbox``, then for each
container ``CreateContainer`` (with ``CDIDevices`` and the pod's volume mounts),
``StartContainer``, ``ContainerStatus``, its log, ``StopContainer`` and
``RemoveContainer``; at the end ``StopPodSandbox`` and ``RemovePodSandbox``. Every call
is one run of ``cri-client`` (conformance/cri), a Go client of ``k8s.io/cri-api``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devtools.containerd import config_toml, overlay_works

#: What the kubelet runs pods in when a pod asks for ``hostNetwork``.
HOST_NAMESPACES = {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}


class CriError(AssertionError):
    """A CRI call or a containerd command failed; the message has what it printed."""


@dataclass
class Containerd:
    """One containerd of the suite's own, and the commands that talk to it."""

    bin_dir: Path
    base: Path
    cdi_dir: Path
    process: subprocess.Popen[bytes] | None = None
    snapshotter: str = "overlayfs"
    #: Image name -> the image ID the kubelet would pass (from ImageStatus).
    image_ids: dict[str, str] = field(default_factory=dict)

    @property
    def socket(self) -> Path:
        """containerd's gRPC socket (the CRI endpoint)."""
        return self.base / "containerd.sock"

    @property
    def log(self) -> Path:
        """containerd's own log."""
        return self.base / "containerd.log"

    def start(self, *, timeout: float = 60) -> float:
        """Write the configuration, start containerd and wait for its CRI; returns the seconds."""
        runc = shutil.which("runc")
        assert runc is not None, "runc is not installed"
        for sub in ("root", "state", "opt", "cni/bin", "cni/net.d"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        self.cdi_dir.mkdir(parents=True, exist_ok=True)
        self.snapshotter = "overlayfs" if overlay_works(self.base) else "native"
        config = self.base / "config.toml"
        config.write_text(
            config_toml(
                self.base, cdi_dirs=[self.cdi_dir], runc=runc, snapshotter=self.snapshotter
            ),
            encoding="utf-8",
        )
        env = {**os.environ, "PATH": f"{self.bin_dir}:{os.environ['PATH']}"}
        started = time.monotonic()
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(self.bin_dir / "containerd"), "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,
            )
        deadline = started + timeout
        while True:
            if self.process.poll() is not None:
                raise CriError(f"containerd exited {self.process.returncode}:\n{self.log_tail()}")
            if self.socket.exists():
                done = self.client("Version", {}, check=False)
                if done.returncode == 0:
                    return time.monotonic() - started
            if time.monotonic() > deadline:
                raise CriError(
                    f"containerd's CRI did not answer in {timeout} s:\n{self.log_tail()}"
                )
            time.sleep(0.05)

    def log_tail(self, size: int = 4000) -> str:
        """The end of containerd's log."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-size:]
        return ""

    def client(
        self, command: str, request: dict[str, Any] | None, *args: str, check: bool = True,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """One run of cri-client: ``command`` with ``request`` as its JSON."""
        done = subprocess.run(
            [str(self.bin_dir / "cri-client"), "-endpoint", f"unix://{self.socket}",
             "-timeout", f"{timeout}s", command, *args],
            input=json.dumps(request) if request is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout + 30,
            check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise CriError(
                f"cri-client {command} {' '.join(args)}: exit {done.returncode}\n{done.stderr}"
            )
        return done

    def call(self, method: str, request: dict[str, Any], *, timeout: float = 120) -> Any:
        """A CRI call: the response message as a dict."""
        return json.loads(self.client(method, request, timeout=timeout).stdout or "{}")

    def ctr(self, *args: str, timeout: float = 600) -> str:
        """containerd's own command line, in the CRI's namespace (k8s.io)."""
        done = subprocess.run(
            [str(self.bin_dir / "ctr"), "--address", str(self.socket), "--namespace", "k8s.io",
             *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise CriError(f"ctr {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
        return done.stdout

    def import_archive(self, archive: Path, name: str) -> str:
        """Import an image archive (docker-archive) and return the image ID the CRI gives it."""
        self.ctr("images", "import", "--snapshotter", self.snapshotter, str(archive))
        return self.image_id(name)

    def image_id(self, name: str, *, timeout: float = 30) -> str:
        """The image's ID, as the kubelet learns it (ImageStatus); it must be there.

        The CRI learns of an import from containerd's events, a moment after ``ctr``
        returns: ImageStatus is asked until it knows the image or ``timeout`` passes.
        """
        deadline = time.monotonic() + timeout
        while name not in self.image_ids:
            status = self.call("ImageStatus", {"image": {"image": name}})
            if "image" in status:
                self.image_ids[name] = status["image"]["id"]
            elif time.monotonic() > deadline:
                raise CriError(f"{name} is not in containerd: {self.ctr('images', 'ls')}")
            else:
                time.sleep(0.05)
        return self.image_ids[name]

    def stop(self) -> None:
        """Remove every pod left, stop containerd and its shims, unmount and remove its files."""
        if self.process is not None and self.process.poll() is None:
            done = self.client("ListPodSandbox", {}, check=False)
            if done.returncode == 0:
                for item in json.loads(done.stdout or "{}").get("items", []):
                    with contextlib.suppress(CriError):
                        self.call("StopPodSandbox", {"podSandboxId": item["id"]})
                        self.call("RemovePodSandbox", {"podSandboxId": item["id"]})
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in self.shims():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for mount in sorted(self.mounts(), key=len, reverse=True):
            subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
        shutil.rmtree(self.base, ignore_errors=True)

    def shims(self) -> list[int]:
        """The process IDs of the shims this containerd started (they name its socket)."""
        found = []
        needle = str(self.socket).encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if needle in Path("/proc", entry, "cmdline").read_bytes():
                        found.append(int(entry))
        return found

    def mounts(self) -> list[str]:
        """The mount points under this containerd's directories."""
        prefix = str(self.base) + "/"
        with open("/proc/self/mounts", encoding="utf-8") as table:
            points = [line.split()[1] for line in table]
        return [p for p in points if p.startswith(prefix)]


@dataclass
class Exited:
    """A container's end, as ContainerStatus and its log show it."""

    returncode: int
    stdout: str
    stderr: str
    reason: str = ""


@dataclass
class Mount:
    """A volume mount of the pod (an emptyDir, a hostPath), as the kubelet passes it."""

    host_path: Path
    container_path: str
    readonly: bool = False

    def cri(self) -> dict[str, Any]:
        """The CRI Mount message."""
        return {
            "containerPath": self.container_path,
            "hostPath": str(self.host_path),
            "readonly": self.readonly,
            "propagation": "PROPAGATION_PRIVATE",
        }


class Pod:
    """One pod, run as the kubelet runs it: a sandbox on the node's network, then containers."""

    def __init__(self, containerd: Containerd, log_root: Path, name: str, namespace: str) -> None:
        self.containerd = containerd
        uid = str(uuid.uuid4())
        self.log_dir = log_root / f"{namespace}_{name}_{uid}"
        self.log_dir.mkdir(parents=True)
        self.config: dict[str, Any] = {
            "metadata": {"name": name, "namespace": namespace, "uid": uid, "attempt": 0},
            "logDirectory": str(self.log_dir),
            "labels": {"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": namespace},
            "linux": {"securityContext": {"namespaceOptions": HOST_NAMESPACES}},
        }
        self.id: str = containerd.call("RunPodSandbox", {"config": self.config})["podSandboxId"]
        self.containers: list[str] = []

    def create(
        self,
        name: str,
        image: str,
        command: Sequence[str],
        args: Sequence[str] = (),
        *,
        cdi_devices: Iterable[str] = (),
        mounts: Iterable[Mount] = (),
        run_as_user: int | None = None,
    ) -> str:
        """CreateContainer with the claims' CDI device IDs and the pod's mounts; returns its ID.

        ``command`` and ``args`` are the container's, as in the Pod; ``run_as_user`` is its
        securityContext's (else the image's user).
        """
        security: dict[str, Any] = {
            "namespaceOptions": HOST_NAMESPACES,
            "seccomp": {"profileType": "RuntimeDefault"},
        }
        if run_as_user is not None:
            security["runAsUser"] = {"value": run_as_user}
        config = {
            "metadata": {"name": name, "attempt": 0},
            "image": {"image": self.containerd.image_id(image), "userSpecifiedImage": image},
            "command": list(command),
            "args": list(args),
            "mounts": [mount.cri() for mount in mounts],
            "logPath": f"{name}/0.log",
            "labels": {"io.kubernetes.container.name": name},
            "linux": {"securityContext": security},
            "CDIDevices": [{"name": device} for device in cdi_devices],
        }
        request = {"podSandboxId": self.id, "config": config, "sandboxConfig": self.config}
        container: str = self.containerd.call("CreateContainer", request)["containerId"]
        self.containers.append(container)
        return container

    def start(
        self, name: str, image: str, command: Sequence[str], args: Sequence[str] = (),
        **options: Any,
    ) -> str:  # fmt: skip
        """Create and start a container; returns its ID."""
        container = self.create(name, image, command, args, **options)
        self.containerd.call("StartContainer", {"containerId": container})
        return container

    def status(self, container: str) -> dict[str, Any]:
        """ContainerStatus's status message."""
        status: dict[str, Any] = self.containerd.call(
            "ContainerStatus", {"containerId": container}
        )["status"]
        return status

    def logs(self, container: str) -> tuple[str, str]:
        """What the container printed so far (its CRI log file): stdout, stderr."""
        streams = json.loads(self.containerd.client("logs", None, container).stdout)
        return streams["stdout"], streams["stderr"]

    def wait_logs(self, container: str, text: str, *, timeout: float = 30) -> tuple[str, str]:
        """Poll the container's log until ``text`` shows up in it; returns both streams."""
        deadline = time.monotonic() + timeout
        while True:
            out, err = self.logs(container)
            if text in out or text in err:
                return out, err
            if time.monotonic() > deadline:
                raise CriError(f"{text!r} not printed by {container}:\n{out}\n{err}")
            time.sleep(0.1)

    def wait(self, container: str, *, timeout: float = 120) -> Exited:
        """Wait for the container to exit (polling its status); its exit code and output."""
        done = self.containerd.client("wait", None, container, timeout=timeout)
        status = json.loads(done.stdout)
        out, err = self.logs(container)
        return Exited(status.get("exitCode", 0), out, err, status.get("reason", ""))

    def run(
        self, name: str, image: str, command: Sequence[str], args: Sequence[str] = (),
        **options: Any,
    ) -> Exited:  # fmt: skip
        """Run a container to its end, as an init container runs: its exit code and output."""
        return self.wait(self.start(name, image, command, args, **options))

    def exec(self, container: str, command: Sequence[str], *, timeout: float = 60) -> Exited:
        """ExecSync in a running container (as the kubelet's exec probes do)."""
        request = {"containerId": container, "cmd": list(command), "timeout": int(timeout)}
        answer = self.containerd.call("ExecSync", request, timeout=timeout + 10)
        decode = base64.b64decode
        return Exited(
            answer.get("exitCode", 0),
            decode(answer.get("stdout", "")).decode(),
            decode(answer.get("stderr", "")).decode(),
        )

    def remove(self) -> None:
        """Stop and remove the containers, then the sandbox, as the kubelet does at pod deletion."""
        for container in self.containers:
            self.containerd.call("StopContainer", {"containerId": container, "timeout": 2})
            self.containerd.call("RemoveContainer", {"containerId": container})
        self.containerd.call("StopPodSandbox", {"podSandboxId": self.id})
        self.containerd.call("RemovePodSandbox", {"podSandboxId": self.id})
