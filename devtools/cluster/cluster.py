"""The cluster of one state directory: :class:`Cluster` brings it up, takes it down,
restarts a driver, reports its processes (the module :mod:`devtools.cluster` says what
each step does and why).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devtools.cluster import deploy
from devtools.cluster.config import credentials, write_kubelet_config
from devtools.cluster.machine import (
    CGROUP_NAMES,
    FIXED_PATHS,
    Recorded,
    cgroup_hierarchies,
    machine_snapshot,
    mounts_below,
    mounts_from,
    port_free,
    processes_naming,
    remove_cgroup,
    start_time,
    stop_process,
)
from devtools.cluster.settings import (
    BASE_IMAGE,
    COMPONENTS,
    DRIVERS,
    FEATURE_GATES,
    IMAGE,
    NODE,
    NODE_CDI_DIRS,
    PORTS,
    PY_DRIVER,
    PY_DRIVER_SOURCE,
    REPO,
    RUN_CDI,
    UPSTREAM_DRIVERS,
    ClusterError,
    log,
    run,
    state_dir,
)
from devtools.containerd import PAUSE_CONTAINERFILE, PAUSE_IMAGE, config_toml, overlay_works
from devtools.podman import CONTAINERS_CONF, debian_rootfs


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
        """What the node's ``/var/run/cdi`` is while the cluster is up (bind-mounted
        there): where the drivers write CDI specs, and containerd reads them beside
        ``/etc/cdi``, as on a node."""
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

    def kubectl(self, *args: str, timeout: float = 120, feed: str | None = None) -> str:
        """kubectl as the admin (``feed``: its stdin); its stdout."""
        command: list[str | Path] = [
            self.bin_dir / "kubectl",
            "--kubeconfig",
            self.kubeconfig,
            *args,
        ]
        return run(command, timeout=timeout, feed=feed)

    # up
    def up(self, *, build_image: bool = True) -> None:
        """Bring the cluster up (see :mod:`devtools.cluster`); a no-op when it is up."""
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
            credentials(self.state, self.pki)
            self.mount_run_cdi()
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

    def mount_run_cdi(self) -> None:
        """Bind the cluster's CDI directory on the node's ``/var/run/cdi`` (made if it is
        missing; ``down`` unmounts it and removes what it made): the drivers write where a
        node's do, and what the machine had there is hidden, never touched."""
        os.makedirs(RUN_CDI, exist_ok=True)
        run(["mount", "--bind", self.cdi_dir, RUN_CDI])

    def unmount_run_cdi(self) -> list[str]:
        """Undo :meth:`mount_run_cdi` (every bind of the cluster's directory there)."""
        target = os.path.realpath(RUN_CDI)
        problems = []
        while target in mounts_from(self.cdi_dir):
            done = subprocess.run(["umount", target], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                problems.append(f"umount {target}: {done.stderr.strip()}")
                break
        return problems

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
        conf = self.state / "containers.conf"
        if not conf.exists():
            conf.write_text(CONTAINERS_CONF)
        return {**os.environ, "CONTAINERS_CONF": str(conf)}

    def build_image(self) -> None:
        """This checkout's image (tagged IMAGE) and the Python example driver's (the tag
        its DaemonSet names), on a Debian base made once, in podman."""
        began = time.monotonic()
        env = self.podman_env()
        exists = subprocess.run(["podman", "image", "exists", BASE_IMAGE], env=env, check=False)
        if exists.returncode != 0:
            make_base_image(BASE_IMAGE, self.state, env)
        images = self.state / "podman-images"
        given = os.environ.get("DRA_METADATA_E2E_IMAGE")
        if given:
            run(["podman", "tag", given, IMAGE], env=env)
        else:
            run([REPO / "scripts" / "build-image", "--base", BASE_IMAGE, "--tag", IMAGE], env=env)
        images.write_text(IMAGE + "\n")
        self.times["image (s)"] = time.monotonic() - began
        began = time.monotonic()
        built = self.bin_dir / "python-driver"  # build-cluster's venv and stubs
        driver_image = deploy.image()
        run([PY_DRIVER_SOURCE / "build-image", "--base", BASE_IMAGE, "--tag", driver_image,
             "--stubs", built / "stubs"],
            env={**env, "PYTHON": str(built / "venv" / "bin" / "python")})  # fmt: skip
        with open(images, "a", encoding="utf-8") as out:
            out.write(driver_image + "\n")
        self.times["driver image (s)"] = time.monotonic() - began

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
            base, cdi_dirs=NODE_CDI_DIRS, runc=runc, snapshotter=snapshotter,
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
            (context / "Containerfile").write_text(PAUSE_CONTAINERFILE)
            run(["podman", "build", "--network", "none", "--pull=never", "--tag", PAUSE_IMAGE,
                 str(context)], env=env)  # fmt: skip
            try:
                self.import_image(PAUSE_IMAGE, context, env)
            finally:
                run(["podman", "rmi", "--force", PAUSE_IMAGE], env=env)
            images = self.state / "podman-images"
            for tag in images.read_text().split() if images.exists() else []:
                self.import_image(tag, context, env)
        write_kubelet_config(self.state, self.pki, self.containerd_socket)
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

    def node_ready(self) -> bool:
        node = json.loads(self.api_get(f"/api/v1/nodes/{NODE}"))
        conditions = node.get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    @property
    def py_driver_test_dir(self) -> Path:
        """The host directory the Python driver's pod mounts for the cluster suite."""
        return self.state / "py-driver"

    @property
    def py_driver_pause(self) -> Path:
        """While this file exists, the Python driver's prepares wait before their second request."""
        return self.py_driver_test_dir / "pause"

    def start_drivers(self) -> None:
        self.kubectl("apply", "-f", str(REPO / "examples" / "cluster" / "device-classes.yaml"))
        self.kubectl("apply", "-f", str(REPO / "examples" / "cluster" / "upstream-classes.yaml"))
        for driver in DRIVERS:
            if driver != PY_DRIVER:
                self.start_driver(driver)
        self.deploy_python_driver()

    def deploy_python_driver(self) -> None:
        """examples/python-driver/deploy/, the DaemonSet as :func:`deploy.for_this_cluster`
        changes it; until its pod is ready and its ResourceSlice published."""
        began = time.monotonic()
        self.py_driver_test_dir.mkdir(exist_ok=True)
        for manifest in deploy.MANIFESTS:
            if manifest != deploy.DAEMONSET_FILE:
                self.kubectl("apply", "-f", str(manifest))
        obj = deploy.for_this_cluster(
            deploy.daemonset(), kubelet_root=self.kubelet_root,
            api_port=PORTS["kube-apiserver"], test_dir=self.py_driver_test_dir,
        )  # fmt: skip
        self.kubectl("apply", "-f", "-", feed=json.dumps(obj))
        (kubelet,) = [r for r in self.recorded() if r.name == "kubelet"]
        try:
            self.wait(f"{PY_DRIVER} slices", self.python_driver_ready, kubelet, timeout=180)
        except ClusterError as err:  # the kubelet's log says little of a pod: say what the pod does
            raise ClusterError(f"{err}\n{self.python_driver_story()}") from None
        self.times["deploy python-driver (s)"] = time.monotonic() - began

    def python_driver_story(self) -> str:
        """The Python driver's pods described, and the end of what they printed."""
        where = ["--namespace", deploy.NAMESPACE, "--selector", deploy.SELECTOR]
        parts = []
        for what in (["describe", "pods"], ["logs", "--tail", "40", "--all-containers"]):
            try:
                parts.append(self.kubectl(*what, *where, timeout=30))
            except (ClusterError, subprocess.TimeoutExpired) as err:
                parts.append(f"kubectl {' '.join(what)}: {err}")
        return "\n".join(parts)

    def python_driver_pods(self) -> list[dict[str, Any]]:
        """The Python driver's pods (the DaemonSet's) that are not going away, as the API
        server has them."""
        found = json.loads(self.kubectl(
            "get", "pods", "--namespace", deploy.NAMESPACE, "--selector", deploy.SELECTOR,
            "--output", "json",
        ))  # fmt: skip
        pods: list[dict[str, Any]] = found["items"]
        return [pod for pod in pods if "deletionTimestamp" not in pod["metadata"]]

    def python_driver_ready(self) -> bool:
        """Whether the DaemonSet's pod is the one of its current template, ready, alone,
        and the driver's ResourceSlice published."""
        ds = json.loads(self.kubectl(
            "get", "daemonset", deploy.DAEMONSET, "--namespace", deploy.NAMESPACE,
            "--output", "json",
        ))  # fmt: skip
        status = ds.get("status", {})
        rolled = (
            status.get("observedGeneration") == ds["metadata"]["generation"]
            and status.get("desiredNumberScheduled") == 1
            and status.get("updatedNumberScheduled") == 1
            and status.get("numberReady") == 1
        )
        return rolled and len(self.python_driver_pods()) == 1 and self.published(PY_DRIVER)

    def start_driver(self, driver: str) -> Recorded:
        """One driver that runs as a process of the host, until its ResourceSlices are
        published: the Go reference driver (``gpu.example.com``, ``nic.example.com``) or
        Kubernetes' e2e test driver."""
        registry = self.kubelet_root / "plugins_registry"
        if driver in UPSTREAM_DRIVERS:  # no CDI directory for its metadata specs: /var/run/cdi
            self.plugin_dir(driver).mkdir(parents=True, exist_ok=True)  # its socket's, not made
            command: list[str | Path] = [
                self.bin_dir / "dra-test-driver", "--drivername", driver,
                "--kubeconfig", self.state / "driver.kubeconfig",
                "kubelet-plugin", "--node-name", NODE, "--num-devices", str(DRIVERS[driver]),
                "--datadir", self.kubelet_root / "plugins",
                "--plugin-registration-path", registry,
                "--cdi-dir", RUN_CDI, "--enable-device-metadata",
            ]  # fmt: skip
        else:
            command = [
                self.bin_dir / "dra-example-driver", "--driver", driver, "--node", NODE,
                "--kubeconfig", self.state / "driver.kubeconfig",
                "--plugin-dir", self.plugin_dir(driver), "--registry-dir", registry,
                "--cdi-dir", RUN_CDI,
            ]  # fmt: skip
            if driver == "nic.example.com":
                command += ["--nri-socket", self.state / "nri.sock"]
        process = self.spawn(driver, command)
        self.wait(f"{driver} slices", lambda: self.published(driver), process)
        return process

    def restart(self, driver: str) -> Recorded:
        """Start a driver again that ended (a test killed it): ``scripts/cluster restart``."""
        if driver == PY_DRIVER:
            raise ClusterError(
                f"{driver} runs as a DaemonSet: Kubernetes starts it again (to replace its "
                f"pod: scripts/cluster kubectl delete pod --namespace {deploy.NAMESPACE} "
                f"--selector {deploy.SELECTOR})"
            )
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
        problems += self.unmount_run_cdi()
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


def http_get(url: str) -> bytes:
    """The body of a plain HTTP GET (etcd's health, on loopback)."""
    with urllib.request.urlopen(url, timeout=2) as answer:
        body: bytes = answer.read()
    return body


def make_base_image(tag: str, scratch: Path, env: dict[str, str]) -> None:
    """A Debian bookworm image with python3, made by mmdebstrap (as the end-to-end suite's)."""
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        rootfs = Path(tmp) / "bookworm.tar"
        debian_rootfs(rootfs)
        run(["podman", "import", str(rootfs), tag], env=env)
