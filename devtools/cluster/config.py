"""What ``up`` writes before it starts anything: credentials, kubeconfigs, the kubelet's
configuration.

The credentials are this cluster's alone, made with ``openssl`` each time ``up`` runs
and never reused: a CA, the API server's and the kubelet's serving certificates, a
client certificate (and a kubeconfig) for the admin, each component and the drivers,
and the service account signing key. Everything is below the state directory: the keys
and certificates in ``pki/``, the kubeconfigs and ``kubelet.json`` beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

from devtools.cluster.settings import NODE, PORTS, run


def credentials(state: Path, pki: Path) -> None:
    """A CA, the API server's certificate, client certificates, a service account key."""
    pki.mkdir(mode=0o700)
    ca = ["-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key")]
    certificate(pki, "ca", "/CN=dra-metadata-cluster-ca", [
        "basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
    ], signer=[])  # fmt: skip
    names = "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    certificate(pki, "apiserver", "/CN=kube-apiserver", [
        f"subjectAltName={names},IP:127.0.0.1,IP:10.96.0.1",
        "extendedKeyUsage=serverAuth",
    ], signer=ca)  # fmt: skip
    certificate(pki, "kubelet-serving", f"/CN=system:node:{NODE}", [
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
        certificate(pki, name, subject, ["extendedKeyUsage=clientAuth"], signer=ca)
        if name != "apiserver-kubelet-client":
            write_kubeconfig(state, pki, name)
    run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-out", pki / "sa.key"])  # fmt: skip
    run(["openssl", "pkey", "-in", pki / "sa.key", "-pubout", "-out", pki / "sa.pub"])


def certificate(
    pki: Path, name: str, subject: str, extensions: list[str], signer: list[str]
) -> None:
    """One key and certificate in pki/: self-signed without ``signer``, else by the CA."""
    config = pki / "req.cnf"
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
        "-keyout", pki / f"{name}.key", "-out", pki / f"{name}.crt",
        "-subj", subject, *signer,
        *[arg for ext in extensions for arg in ("-addext", ext)],
    ])  # fmt: skip


def write_kubeconfig(state: Path, pki: Path, user: str) -> Path:
    """The kubeconfig of one client certificate: ``admin.kubeconfig``, ``USER.kubeconfig``."""
    path = state / ("admin.kubeconfig" if user == "admin" else f"{user}.kubeconfig")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dra-metadata", "cluster": {
            "server": f"https://127.0.0.1:{PORTS['kube-apiserver']}",
            "certificate-authority": str(pki / "ca.crt"),
        }}],
        "users": [{"name": user, "user": {
            "client-certificate": str(pki / f"{user}.crt"),
            "client-key": str(pki / f"{user}.key"),
        }}],
        "contexts": [{"name": "dra-metadata", "context": {
            "cluster": "dra-metadata", "user": user, "namespace": "default",
        }}],
        "current-context": "dra-metadata",
    }  # fmt: skip
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path


def write_kubelet_config(state: Path, pki: Path, containerd_socket: Path) -> Path:
    """``kubelet.json``: the kubelet's configuration, on 127.0.0.1 and the cluster's ports
    (:mod:`devtools.cluster` says why the settings these machines need)."""
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
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(pki / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(pki / "kubelet-serving.key"),
        "containerRuntimeEndpoint": f"unix://{containerd_socket}",
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "podLogsDir": str(state / "pod-logs"),
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
    path = state / "kubelet.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path
