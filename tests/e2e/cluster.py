"""A one-node Kubernetes cluster on this machine: the cluster suite's, and ``scripts/cluster``.

``scripts/cluster up`` builds what is missing (``scripts/build-containerd``,
``scripts/build-cluster``: Kubernetes and etcd as ``conformance/cluster/go.mod`` pins
them, the reference driver of ``conformance/cluster/driver``), makes credentials for
this cluster alone, starts etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, containerd and the kubelet, all on 127.0.0.1, then the reference
driver (``gpu.example.com`` and ``nic.example.com``) and the Python example driver
(``py.example.com``, examples/python-driver); it imports this checkout's image
as ``localhost/dra-metadata:cluster``, waits until the node is Ready and both drivers'
ResourceSlices are published, and prints ``export KUBECONFIG=...`` last. Run again
while up, it does nothing but print that line. ``scripts/cluster down`` stops
everything ``up`` started (by the PIDs it recorded), removes every pod, unmounts what
is mounted below the state directory, removes the state and what the kubelet makes
at fixed paths, and leaves the machine as it was. ``scripts/cluster kubectl ...`` runs
kubectl as the cluster's admin; ``scripts/cluster status`` lists the processes and
their memory.

What this machine needs, each on purpose:

- **apiserver**: ``--endpoint-reconciler-type=none`` (with a loopback advertise address
  the ``kubernetes`` Service's endpoints cannot be reconciled); the
  ``DRAListTypeAttributes`` feature gate (alpha in v1.37) on the apiserver and the
  scheduler, so that a list-valued ``numaNode`` survives in ResourceSlices;
  ``--kubelet-preferred-address-types=Hostname``: the node is ``localhost``, so
  ``kubectl logs`` and ``exec`` reach the kubelet on 127.0.0.1.
- **kubelet**: ``failCgroupV1: false`` (these machines have cgroup v1),
  ``cgroupDriver: cgroupfs`` (no systemd), ``failSwapOn: false``, ``oomScoreAdj: 0``
  (a negative score is refused here); its root, pod logs and ports are the cluster's own;
  image garbage collection off (the image is imported, never pulled).
- **containerd** (the CRI suite's configuration, tests/e2e/cri.py) with NRI enabled on
  a socket of its own, for the NIC driver's ``RunPodSandbox`` hook, and CDI specs read
  from the cluster's directory, where the drivers write. Its CNI configuration has only
  ``loopback``: the runtime then reports its network ready, and every pod uses
  ``hostNetwork``, so no CNI plugin ever runs.
- The kubelet keeps some paths whatever its root: ``/var/lib/kubelet/device-plugins``
  and ``/var/log/containers``; it also bind-mounts its root on itself. ``up`` records
  which of the fixed paths existed before, ``down`` removes the others.

Everything lives in the state directory (``$DRA_METADATA_CLUSTER_DIR``, default
``/var/lib/dra-metadata-cluster``): credentials, kubeconfigs, etcd's data, containerd's
root, the kubelet's root, logs (``logs/``) and the PID files (``run/``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

#: The state directory's variable and default.
STATE_ENV = "DRA_METADATA_CLUSTER_DIR"
DEFAULT_STATE = Path("/var/lib/dra-metadata-cluster")
#: The image the pods run, as containerd knows it.
IMAGE = "localhost/dra-metadata:cluster"
#: The podman image the cluster's image is built on (kept between runs, a cache).
BASE_IMAGE = "localhost/dra-metadata-cluster-base:bookworm"
#: The node's name (its address type Hostname resolves to loopback).
NODE = "localhost"
DRIVERS = {"gpu.example.com": 4, "nic.example.com": 2, "py.example.com": 4}
#: The Python example driver (examples/python-driver), and where it waits when told to
#: (a test kills it there, in the middle of a prepare).
PY_DRIVER = "py.example.com"
PY_DRIVER_SOURCE = REPO / "examples" / "python-driver"
#: Ports on 127.0.0.1 (none of them Kubernetes' defaults, so another cluster may run).
PORTS = {
    "etcd": 23790,
    "etcd-peer": 23800,
    "kube-apiserver": 16443,
    "kube-controller-manager": 20257,
    "kube-scheduler": 20259,
    "kubelet": 20250,
    "kubelet-healthz": 20248,
}
FEATURE_GATES = "DRAListTypeAttributes=true"
#: Paths the kubelet and containerd use whatever their configuration; ``down`` removes
#: those that did not exist before ``up`` (shared ones only when empty).
FIXED_PATHS = (
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet",
    "/var/log/containers",
    "/var/log/pods",
    "/run/containerd/s",
    "/run/containerd",
)
#: cgroups the kubelet makes below each v1 hierarchy (cgroupfs driver).
CGROUP_NAMES = ("kubepods",)
#: The components in start order (``down`` stops them in reverse).
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "containerd",
    "kubelet",
    "gpu.example.com",
    "nic.example.com",
    "py.example.com",
)


class ClusterError(Exception):
    """Bringing the cluster up or down failed; the message says where and why."""


def state_dir() -> Path:
    """The cluster's state directory."""
    return Path(os.environ.get(STATE_ENV) or DEFAULT_STATE)


def log(message: str) -> None:
    """One line of progress on stderr."""
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def run(
    command: Sequence[str | Path], *, env: dict[str, str] | None = None, timeout: float = 600,
    feed: str | None = None,
) -> str:  # fmt: skip
    """Run a command to its end; its stdout, or a ClusterError with what it printed."""
    done = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        env=env,
        input=feed,
        stdin=None if feed is not None else subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise ClusterError(
            f"{' '.join(map(str, command))}: exit {done.returncode}\n"
            f"{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )
    return done.stdout


# --- processes ---------------------------------------------------------------------------


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


def http_get(url: str) -> bytes:
    """The body of a plain HTTP GET (etcd's health, on loopback)."""
    with urllib.request.urlopen(url, timeout=2) as answer:
        body: bytes = answer.read()
    return body


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# --- the cluster ---------------------------------------------------------------------------


class Cluster:
    """The cluster of one state directory."""

    def __init__(self, state: Path | None = None) -> None:
        self.state = state or state_dir()
        self.pki = self.state / "pki"
        self.logs = self.state / "logs"
        self.runs = self.state / "run"
        self.cri_bin = REPO / "build" / "cri"
        self.times: dict[str, float] = {}
        #: The components this object started (to reap them once stopped).
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    # paths
    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig (what ``up`` prints)."""
        return self.state / "admin.kubeconfig"

    @property
    def containerd_socket(self) -> Path:
        return self.state / "containerd" / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.state / "kubelet"

    @property
    def cdi_dir(self) -> Path:
        """Where the drivers write CDI specs and containerd reads them."""
        return self.state / "cdi"

    def plugin_dir(self, driver: str) -> Path:
        """The driver's plugin data directory (its metadata files are below it)."""
        return self.kubelet_root / "plugins" / driver

    @property
    def bin_file(self) -> Path:
        """Records the directory of the built binaries."""
        return self.state / "bin-dir"

    @property
    def bin_dir(self) -> Path:
        return Path(self.bin_file.read_text().strip())

    # state
    def recorded(self) -> list[Recorded]:
        """The processes ``up`` started and recorded, in start order."""
        out = []
        for name in COMPONENTS:
            with contextlib.suppress(OSError, ValueError):
                pid, started = (self.runs / f"{name}.pid").read_text().split()
                out.append(Recorded(name, int(pid), started))
        return out

    def is_up(self) -> bool:
        """Whether every component runs and the API server is ready."""
        alive = [r.name for r in self.recorded() if r.alive()]
        if alive != list(COMPONENTS):
            return False
        try:
            return self.api_get("/readyz", timeout=5) == "ok"
        except (OSError, ClusterError):
            return False

    # API access
    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(self.pki / "admin.crt", self.pki / "admin.key")
        return context

    def api_get(self, path: str, *, timeout: float = 10) -> str:
        """GET an API path as the admin; the body."""
        url = f"https://127.0.0.1:{PORTS['kube-apiserver']}{path}"
        with urllib.request.urlopen(url, context=self.ssl_context(), timeout=timeout) as answer:
            body: bytes = answer.read()
        return body.decode()

    def kubectl(self, *args: str, timeout: float = 120) -> str:
        """kubectl as the admin; its stdout."""
        command: list[str | Path] = [
            self.bin_dir / "kubectl",
            "--kubeconfig",
            self.kubeconfig,
            *args,
        ]
        return run(command, timeout=timeout)

    # up
    def up(self, *, build_image: bool = True) -> None:
        """Bring the cluster up (see the module's docstring); a no-op when it is up."""
        if os.geteuid() != 0:
            raise ClusterError("needs root: the kubelet and containerd make mounts and cgroups")
        if self.is_up():
            log(f"already up ({self.state})")
            return
        if self.state.exists():
            log(f"{self.state} is there but the cluster is not up: taking it down first")
            self.down()
        busy = [f"{name} {port}" for name, port in PORTS.items() if not port_free(port)]
        if busy:
            raise ClusterError(f"ports in use on 127.0.0.1: {', '.join(busy)}")
        started = time.monotonic()
        before = self.machine()
        self.state.mkdir(parents=True)
        self.state.chmod(0o700)
        for sub in (self.logs, self.runs, self.cdi_dir):
            sub.mkdir(parents=True, exist_ok=True)
        (self.state / "machine.json").write_text(json.dumps(before, indent=2) + "\n")
        try:
            self.build()
            if build_image:
                self.build_image()
            began = time.monotonic()
            self.credentials()
            self.start_control_plane()
            self.start_node()
            self.start_drivers()
            self.times["start (s)"] = time.monotonic() - began
        except BaseException:
            log(f"up failed; the logs are in {self.logs} until `scripts/cluster down`")
            raise
        self.times["up (s)"] = time.monotonic() - started
        figures = ", ".join(f"{name} {value:.1f}" for name, value in self.times.items())
        log(f"up: {figures}; {self.rss_mib():.0f} MiB RSS")

    def machine(self) -> dict[str, Any]:
        """Which fixed paths and cgroups exist now (for ``down``), and the machine's
        snapshot (for the test that checks ``down``)."""
        cgroups = [
            str(path / name)
            for path in cgroup_hierarchies()
            for name in CGROUP_NAMES
            if (path / name).exists()
        ]
        return {
            "paths": [p for p in FIXED_PATHS if os.path.lexists(p)],
            "cgroups": cgroups,
            "snapshot": machine_snapshot(self.state),
        }

    def build(self) -> None:
        """containerd (scripts/build-containerd), Kubernetes, etcd and the driver."""
        began = time.monotonic()
        run([REPO / "scripts" / "build-containerd", self.cri_bin], timeout=3600)
        self.times["build containerd (s)"] = time.monotonic() - began
        began = time.monotonic()
        out = run([REPO / "scripts" / "build-cluster"], timeout=7200)
        self.bin_file.write_text(out.strip().splitlines()[-1] + "\n")
        self.times["build Kubernetes (s)"] = time.monotonic() - began

    def podman_env(self) -> dict[str, str]:
        from tests.e2e.conftest import CONTAINERS_CONF

        conf = self.state / "containers.conf"
        if not conf.exists():
            conf.write_text(CONTAINERS_CONF)
        return {**os.environ, "CONTAINERS_CONF": str(conf)}

    def build_image(self) -> None:
        """This checkout's image, on a Debian base made once, tagged as IMAGE in podman."""
        began = time.monotonic()
        env = self.podman_env()
        given = os.environ.get("DRA_METADATA_E2E_IMAGE")
        if given:
            run(["podman", "tag", given, IMAGE], env=env)
        else:
            exists = subprocess.run(["podman", "image", "exists", BASE_IMAGE], env=env, check=False)
            if exists.returncode != 0:
                make_base_image(BASE_IMAGE, self.state, env)
            run([REPO / "scripts" / "build-image", "--base", BASE_IMAGE, "--tag", IMAGE], env=env)
        (self.state / "podman-images").write_text(IMAGE + "\n")
        self.times["image (s)"] = time.monotonic() - began

    def credentials(self) -> None:
        """A CA, the API server's certificate, client certificates, a service account key."""
        self.pki.mkdir(mode=0o700)
        ca = ["-CA", str(self.pki / "ca.crt"), "-CAkey", str(self.pki / "ca.key")]
        self.certificate("ca", "/CN=dra-metadata-cluster-ca", [
            "basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
        ], signer=[])  # fmt: skip
        names = "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
        self.certificate("apiserver", "/CN=kube-apiserver", [
            f"subjectAltName={names},IP:127.0.0.1,IP:10.96.0.1",
            "extendedKeyUsage=serverAuth",
        ], signer=ca)  # fmt: skip
        self.certificate("kubelet-serving", f"/CN=system:node:{NODE}", [
            "subjectAltName=DNS:localhost,IP:127.0.0.1", "extendedKeyUsage=serverAuth",
        ], signer=ca)  # fmt: skip
        clients = {
            "admin": "/O=system:masters/CN=dra-metadata-admin",
            "kubelet": f"/O=system:nodes/CN=system:node:{NODE}",
            "kube-scheduler": "/CN=system:kube-scheduler",
            "kube-controller-manager": "/CN=system:kube-controller-manager",
            "apiserver-kubelet-client": "/O=system:masters/CN=kube-apiserver-kubelet-client",
            # The reference driver reads claims and writes ResourceSlices; a test driver
            # of a test cluster, it gets the admin's group rather than RBAC of its own.
            "driver": "/O=system:masters/CN=dra-example-driver",
        }
        for name, subject in clients.items():
            self.certificate(name, subject, ["extendedKeyUsage=clientAuth"], signer=ca)
            if name != "apiserver-kubelet-client":
                self.write_kubeconfig(name)
        run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", self.pki / "sa.key"])  # fmt: skip
        run(["openssl", "pkey", "-in", self.pki / "sa.key", "-pubout", "-out",
             self.pki / "sa.pub"])  # fmt: skip

    def certificate(
        self, name: str, subject: str, extensions: list[str], signer: list[str]
    ) -> None:
        """One key and certificate in pki/: self-signed without ``signer``, else by the CA."""
        config = self.pki / "req.cnf"
        config.write_text("[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n")
        if signer:
            extensions = [
                "basicConstraints=critical,CA:FALSE",
                "keyUsage=critical,digitalSignature,keyEncipherment",
                *extensions,
            ]
        run([
            "openssl", "req", "-config", config, "-x509", "-newkey", "ec",
            "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "30",
            "-keyout", self.pki / f"{name}.key", "-out", self.pki / f"{name}.crt",
            "-subj", subject, *signer,
            *[arg for ext in extensions for arg in ("-addext", ext)],
        ])  # fmt: skip

    def write_kubeconfig(self, user: str) -> Path:
        path = self.state / ("admin.kubeconfig" if user == "admin" else f"{user}.kubeconfig")
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "dra-metadata", "cluster": {
                "server": f"https://127.0.0.1:{PORTS['kube-apiserver']}",
                "certificate-authority": str(self.pki / "ca.crt"),
            }}],
            "users": [{"name": user, "user": {
                "client-certificate": str(self.pki / f"{user}.crt"),
                "client-key": str(self.pki / f"{user}.key"),
            }}],
            "contexts": [{"name": "dra-metadata", "context": {
                "cluster": "dra-metadata", "user": user, "namespace": "default",
            }}],
            "current-context": "dra-metadata",
        }  # fmt: skip
        path.write_text(json.dumps(config, indent=2) + "\n")
        path.chmod(0o600)
        return path

    def spawn(self, name: str, command: Sequence[str | Path], **env: str) -> Recorded:
        """Start a component in its own session, its output in logs/NAME.log; record it."""
        with open(self.logs / f"{name}.log", "ab") as out:
            process = subprocess.Popen(
                [str(part) for part in command],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env={**os.environ, **env},
                start_new_session=True,
                cwd=self.state,
            )
        self.children[name] = process
        started = None
        while started is None:  # the child's /proc entry is there at once; be sure
            started = start_time(process.pid)
        (self.runs / f"{name}.pid").write_text(f"{process.pid} {started}\n")
        return Recorded(name, process.pid, started)

    def wait(self, what: str, ready: Any, process: Recorded, timeout: float = 300) -> None:
        """Poll ``ready()`` until it is true; fail early if the process ended."""
        began = time.monotonic()
        while True:
            with contextlib.suppress(OSError, ClusterError, ValueError):
                if ready():
                    self.times[f"{what} (s)"] = time.monotonic() - began
                    return
            if not process.alive():
                raise ClusterError(f"{process.name} ended:\n{self.log_tail(process.name)}")
            if time.monotonic() - began > timeout:
                raise ClusterError(f"{what}: not in {timeout} s\n{self.log_tail(process.name)}")
            time.sleep(0.25)

    def log_tail(self, name: str, size: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return (self.logs / f"{name}.log").read_text(errors="replace")[-size:]
        return ""

    def start_control_plane(self) -> None:
        b, pki = self.bin_dir, self.pki
        etcd_url = f"http://127.0.0.1:{PORTS['etcd']}"
        peer_url = f"http://127.0.0.1:{PORTS['etcd-peer']}"
        etcd = self.spawn("etcd", [
            b / "etcd", "--name", "node", "--data-dir", self.state / "etcd",
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"node={peer_url}", "--unsafe-no-fsync",
        ])  # fmt: skip
        self.wait("etcd", lambda: b'"health":"true"' in http_get(f"{etcd_url}/health"), etcd)
        apiserver = self.spawn("kube-apiserver", [
            b / "kube-apiserver",
            "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(PORTS["kube-apiserver"]),
            "--endpoint-reconciler-type", "none",
            "--cert-dir", self.state / "apiserver",
            "--tls-cert-file", pki / "apiserver.crt",
            "--tls-private-key-file", pki / "apiserver.key",
            "--client-ca-file", pki / "ca.crt",
            "--service-account-key-file", pki / "sa.pub",
            "--service-account-signing-key-file", pki / "sa.key",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", "10.96.0.0/24",
            "--authorization-mode", "Node,RBAC",
            "--kubelet-client-certificate", pki / "apiserver-kubelet-client.crt",
            "--kubelet-client-key", pki / "apiserver-kubelet-client.key",
            "--kubelet-certificate-authority", pki / "ca.crt",
            "--kubelet-preferred-address-types", "Hostname",
            "--feature-gates", FEATURE_GATES,
            "--profiling=false",
        ])  # fmt: skip
        self.wait("kube-apiserver ready", lambda: self.api_get("/readyz") == "ok", apiserver)
        self.spawn("kube-controller-manager", [
            b / "kube-controller-manager",
            "--kubeconfig", self.state / "kube-controller-manager.kubeconfig",
            "--authentication-kubeconfig", self.state / "kube-controller-manager.kubeconfig",
            "--authorization-kubeconfig", self.state / "kube-controller-manager.kubeconfig",
            "--bind-address", "127.0.0.1", "--secure-port", str(PORTS["kube-controller-manager"]),
            "--leader-elect=false", "--use-service-account-credentials=true",
            "--service-account-private-key-file", pki / "sa.key",
            "--root-ca-file", pki / "ca.crt",
            "--cert-dir", self.state / "kube-controller-manager",
            "--profiling=false",
        ])  # fmt: skip
        self.spawn("kube-scheduler", [
            b / "kube-scheduler",
            "--kubeconfig", self.state / "kube-scheduler.kubeconfig",
            "--authentication-kubeconfig", self.state / "kube-scheduler.kubeconfig",
            "--authorization-kubeconfig", self.state / "kube-scheduler.kubeconfig",
            "--bind-address", "127.0.0.1", "--secure-port", str(PORTS["kube-scheduler"]),
            "--leader-elect=false", "--feature-gates", FEATURE_GATES,
            "--cert-dir", self.state / "kube-scheduler",
            "--profiling=false",
        ])  # fmt: skip

    def start_node(self) -> None:
        from tests.e2e.cri import PAUSE_IMAGE, config_toml, overlay_works

        base = self.state / "containerd"
        for sub in ("root", "state", "opt", "cni/bin", "cni/net.d"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        (base / "cni" / "net.d" / "10-loopback.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "loopback", "plugins": [{"type": "loopback"}],
        }, indent=2) + "\n")  # fmt: skip
        runc = shutil.which("runc")
        if runc is None:
            raise ClusterError("needs runc (apt-get install runc)")
        snapshotter = "overlayfs" if overlay_works(base) else "native"
        (self.state / "snapshotter").write_text(snapshotter + "\n")
        config = config_toml(
            base, cdi_dir=self.cdi_dir, runc=runc, snapshotter=snapshotter,
            nri_socket=self.state / "nri.sock",
        )  # fmt: skip
        (base / "config.toml").write_text(config)
        containerd = self.spawn(
            "containerd",
            [self.cri_bin / "containerd", "--config", base / "config.toml"],
            PATH=f"{self.cri_bin}:{os.environ['PATH']}",
        )
        cri = [str(self.cri_bin / "cri-client"), "-endpoint", f"unix://{self.containerd_socket}"]
        self.wait("containerd", lambda: run([*cri, "Version"], feed="{}") != "", containerd)
        # The sandbox image (the static pause binary) and ours, from podman: nothing is pulled.
        env = self.podman_env()
        with tempfile.TemporaryDirectory(dir=self.state) as tmp:
            context = Path(tmp)
            shutil.copy(self.cri_bin / "pause", context / "pause")
            (context / "Containerfile").write_text(
                'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n'
            )
            run(["podman", "build", "--network", "none", "--pull=never", "--tag", PAUSE_IMAGE,
                 str(context)], env=env)  # fmt: skip
            try:
                self.import_image(PAUSE_IMAGE, context, env)
            finally:
                run(["podman", "rmi", "--force", PAUSE_IMAGE], env=env)
            if (self.state / "podman-images").exists():
                self.import_image(IMAGE, context, env)
        self.write_kubelet_config()
        kubelet = self.spawn("kubelet", [
            self.bin_dir / "kubelet",
            "--config", self.state / "kubelet.json",
            "--kubeconfig", self.state / "kubelet.kubeconfig",
            "--root-dir", self.kubelet_root,
            "--cert-dir", self.kubelet_root / "pki",
            "--hostname-override", NODE,
            "--v", "2",
        ])  # fmt: skip
        self.wait("node Ready", self.node_ready, kubelet)

    def import_image(self, tag: str, scratch: Path, env: dict[str, str]) -> None:
        """Hand a podman image to the cluster's containerd (podman save, ctr images import)."""
        snapshotter = (self.state / "snapshotter").read_text().strip()
        archive = scratch / "image.tar"
        run(["podman", "save", "--format", "docker-archive", "--output", archive, tag], env=env)
        try:
            run([self.cri_bin / "ctr", "--address", self.containerd_socket, "--namespace",
                 "k8s.io", "images", "import", "--snapshotter", snapshotter, archive])  # fmt: skip
        finally:
            archive.unlink()

    def write_kubelet_config(self) -> None:
        config = {
            "kind": "KubeletConfiguration",
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "address": "127.0.0.1",
            "port": PORTS["kubelet"],
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": PORTS["kubelet-healthz"],
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.pki / "ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": str(self.pki / "kubelet-serving.crt"),
            "tlsPrivateKeyFile": str(self.pki / "kubelet-serving.key"),
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "failSwapOn": False,
            "oomScoreAdj": 0,
            "podLogsDir": str(self.state / "pod-logs"),
            "clusterDomain": "cluster.local",
            "resolvConf": "/etc/resolv.conf",
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "rotateCertificates": False,
            "serializeImagePulls": False,
        }
        (self.state / "kubelet.json").write_text(json.dumps(config, indent=2) + "\n")

    def node_ready(self) -> bool:
        node = json.loads(self.api_get(f"/api/v1/nodes/{NODE}"))
        conditions = node.get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    @property
    def py_driver_pause(self) -> Path:
        """While this file exists, the Python driver's prepares wait before their second request."""
        return self.state / "py-driver-pause"

    def start_drivers(self) -> None:
        self.kubectl("apply", "-f", str(REPO / "examples" / "cluster" / "device-classes.yaml"))
        self.kubectl("apply", "-f", str(PY_DRIVER_SOURCE / "device-class.yaml"))
        for driver in DRIVERS:
            self.start_driver(driver)

    def start_driver(self, driver: str) -> Recorded:
        """One driver, until its ResourceSlices are published: the Go reference driver
        (``gpu.example.com``, ``nic.example.com``) or the Python example driver, run from
        the venv build-cluster made with this checkout first on ``PYTHONPATH``."""
        registry = self.kubelet_root / "plugins_registry"
        env: dict[str, str] = {}
        if driver == PY_DRIVER:
            built = self.bin_dir / "python-driver"
            command: list[str | Path] = [
                built / "venv" / "bin" / "python", PY_DRIVER_SOURCE / "driver.py",
                "--node", NODE, "--kubeconfig", self.state / "driver.kubeconfig",
                "--plugin-dir", self.plugin_dir(driver), "--registry-dir", registry,
                "--cdi-dir", self.cdi_dir, "--stubs", built / "stubs",
                "--test-pause-file", self.py_driver_pause,
            ]  # fmt: skip
            env = {"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        else:
            command = [
                self.bin_dir / "dra-example-driver", "--driver", driver, "--node", NODE,
                "--kubeconfig", self.state / "driver.kubeconfig",
                "--plugin-dir", self.plugin_dir(driver), "--registry-dir", registry,
                "--cdi-dir", self.cdi_dir,
            ]  # fmt: skip
            if driver == "nic.example.com":
                command += ["--nri-socket", self.state / "nri.sock"]
        process = self.spawn(driver, command, **env)
        self.wait(f"{driver} slices", lambda: self.published(driver), process)
        return process

    def restart(self, driver: str) -> Recorded:
        """Start a driver again that ended (a test killed it): ``scripts/cluster restart``."""
        if driver not in DRIVERS:
            raise ClusterError(f"no driver {driver!r}: one of {', '.join(DRIVERS)}")
        running = {r.name: r for r in self.recorded() if r.alive()}
        if "kubelet" not in running or "kube-apiserver" not in running:
            raise ClusterError("not up (scripts/cluster up)")
        if driver in running:
            raise ClusterError(f"{driver} is still running (PID {running[driver].pid})")
        child = self.children.pop(driver, None)
        if child is not None:
            child.wait(5)
        return self.start_driver(driver)

    def published(self, driver: str) -> bool:
        """Whether the driver's ResourceSlices list all its devices."""
        slices = json.loads(self.api_get("/apis/resource.k8s.io/v1/resourceslices"))["items"]
        devices = [
            d["name"] for s in slices if s["spec"]["driver"] == driver for d in s["spec"]["devices"]
        ]
        return len(devices) == DRIVERS[driver]

    def rss_mib(self) -> float:
        """The cluster's resident memory: every component and what runs below it."""
        return sum(r.rss_kib() for r in self.recorded() if r.alive()) / 1024

    # down
    def down(self) -> None:
        """Stop everything ``up`` started, unmount, remove the state; restore the fixed paths."""
        if not self.state.exists():
            log(f"nothing to take down ({self.state} does not exist)")
            return
        if os.geteuid() != 0:
            raise ClusterError("needs root")
        recorded = {r.name: r for r in self.recorded()}
        problems: list[str] = []
        for name in reversed(COMPONENTS):
            process = recorded.get(name)
            if name == "containerd":
                problems += self.remove_pods()
            if process is not None:
                try:
                    stop_process(process.pid, process.started)
                except ClusterError as err:
                    problems.append(str(err))
            child = self.children.pop(name, None)
            if child is not None:
                child.wait(5)  # ended: reaped now
            if name == "containerd":
                for pid in processes_naming(str(self.containerd_socket)):  # its shims
                    stop_process(pid, start_time(pid), grace=5)
        for mount in sorted(mounts_below(self.state), key=len, reverse=True):
            done = subprocess.run(["umount", mount], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
        left = mounts_below(self.state)
        if left:
            raise ClusterError(f"still mounted, so {self.state} is kept: {', '.join(left)}")
        self.restore_machine()
        images = self.state / "podman-images"
        if images.exists():
            env = self.podman_env()
            for tag in images.read_text().split():
                subprocess.run(["podman", "rmi", "--force", tag], env=env, capture_output=True,
                               check=False)  # fmt: skip
        shutil.rmtree(self.state)
        if problems:
            raise ClusterError("down: " + "; ".join(problems))
        log(f"down: {self.state} removed")

    def remove_pods(self) -> list[str]:
        """Stop and remove every pod sandbox containerd has (the kubelet is stopped)."""
        if not self.containerd_socket.exists() or not (self.cri_bin / "cri-client").exists():
            return []
        cri = [str(self.cri_bin / "cri-client"), "-endpoint", f"unix://{self.containerd_socket}",
               "-timeout", "60s"]  # fmt: skip
        try:
            items = json.loads(run([*cri, "ListPodSandbox"], feed="{}") or "{}").get("items", [])
        except (ClusterError, subprocess.TimeoutExpired) as err:
            return [f"ListPodSandbox: {err}"]
        problems = []
        for item in items:
            request = json.dumps({"podSandboxId": item["id"]})
            for call in ("StopPodSandbox", "RemovePodSandbox"):
                try:
                    run([*cri, call], feed=request, timeout=90)
                except (ClusterError, subprocess.TimeoutExpired) as err:
                    problems.append(f"{call} {item['id']}: {err}")
        return problems

    def restore_machine(self) -> None:
        """Remove the fixed paths and cgroups that did not exist before ``up``."""
        with contextlib.suppress(OSError, ValueError):
            before = json.loads((self.state / "machine.json").read_text())
            for link in Path("/var/log/containers").glob("*.log"):
                with contextlib.suppress(OSError):
                    if os.readlink(link).startswith(str(self.state) + "/"):
                        link.unlink()
            for path in FIXED_PATHS:
                if path in before["paths"] or not os.path.lexists(path):
                    continue
                if path == "/var/lib/kubelet/device-plugins":
                    shutil.rmtree(path, ignore_errors=True)  # the kubelet's socket, checkpoint
                else:
                    with contextlib.suppress(OSError):
                        os.rmdir(path)  # only when empty: others may use it
            for hierarchy in cgroup_hierarchies():
                for name in CGROUP_NAMES:
                    top = hierarchy / name
                    if str(top) not in before["cgroups"] and top.is_dir():
                        remove_cgroup(top)

    def status(self) -> list[tuple[str, int, bool, float]]:
        """Each recorded component: name, PID, alive, RSS in MiB (with its descendants)."""
        return [(r.name, r.pid, r.alive(), r.rss_kib() / 1024) for r in self.recorded()]


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


def make_base_image(tag: str, scratch: Path, env: dict[str, str]) -> None:
    """A Debian bookworm image with python3, made by mmdebstrap (as the end-to-end suite's)."""
    from tests.e2e.conftest import debian_rootfs

    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        rootfs = Path(tmp) / "bookworm.tar"
        debian_rootfs(rootfs)
        run(["podman", "import", str(rootfs), tag], env=env)


def main(argv: Sequence[str] | None = None) -> int:
    """``scripts/cluster``: up, down, status, kubectl ARGS..."""
    parser = argparse.ArgumentParser(
        prog="scripts/cluster",
        description="A one-node Kubernetes cluster on 127.0.0.1 with the reference DRA driver.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="build what is missing, start, print export KUBECONFIG=... last")
    sub.add_parser("down", help="stop everything up started and restore the machine")
    sub.add_parser("status", help="the components, their PIDs and memory")
    restart = sub.add_parser("restart", help="start a driver again that ended")
    restart.add_argument("driver", choices=list(DRIVERS))
    kubectl = sub.add_parser("kubectl", help="kubectl as the cluster's admin")
    kubectl.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cluster = Cluster()
    try:
        if args.command == "up":
            cluster.up()
            print(f"export KUBECONFIG={cluster.kubeconfig}")
        elif args.command == "down":
            cluster.down()
        elif args.command == "restart":
            cluster.restart(args.driver)
        elif args.command == "status":
            if not cluster.state.exists():
                print("down")
                return 1
            total = 0.0
            for name, pid, alive, rss in cluster.status():
                total += rss if alive else 0
                print(f"{name:24} {pid:>8} {'running' if alive else 'ended':8} {rss:7.1f} MiB")
            print(f"{'total':24} {'':>8} {'':8} {total:7.1f} MiB")
        else:
            if not cluster.bin_file.exists():
                print("scripts/cluster: not up (scripts/cluster up)", file=sys.stderr)
                return 1
            command = [str(cluster.bin_dir / "kubectl"), "--kubeconfig", str(cluster.kubeconfig)]
            os.execv(command[0], [*command, *args.args])
    except ClusterError as err:
        print(f"scripts/cluster: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
