"""A one-node Kubernetes cluster on this machine: the cluster suite's, and ``scripts/cluster``.

``scripts/cluster up`` builds what is missing (``scripts/build-containerd``,
``scripts/build-cluster``: Kubernetes and etcd as ``conformance/cluster/go.mod`` pins
them, the reference driver of ``conformance/cluster/driver``), makes credentials for
this cluster alone, starts etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, containerd and the kubelet, all on 127.0.0.1, then the reference
driver (``gpu.example.com`` and ``nic.example.com``) and Kubernetes' e2e test driver
(two drivers) as processes of the host, and the Python example driver
(``py.example.com``, examples/python-driver) as a DaemonSet
(:mod:`~devtools.cluster.deploy`); it imports this checkout's image as
``localhost/dra-metadata:cluster`` and the Python driver's, waits until the node is Ready
and every driver's ResourceSlices are published, and prints ``export KUBECONFIG=...``
last. Run again
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
- **containerd** (the CRI suite's configuration, :mod:`devtools.containerd`) with NRI
  enabled on a socket of its own, for the NIC driver's ``RunPodSandbox`` hook, and CDI
  specs read from ``/etc/cdi`` and ``/var/run/cdi``, as a node's (the cluster's CDI
  directory is mounted on ``/var/run/cdi`` while it is up), where the drivers write.
  Its CNI configuration has only ``loopback``: the runtime then reports its network
  ready, and every pod uses ``hostNetwork``, so no CNI plugin ever runs.
- The kubelet keeps some paths whatever its root: ``/var/lib/kubelet/device-plugins``
  and ``/var/log/containers``; it also bind-mounts its root on itself. ``up`` records
  which of the fixed paths existed before, ``down`` removes the others.

Everything lives in the state directory (``$DRA_METADATA_CLUSTER_DIR``, default
``/var/lib/dra-metadata-cluster``): credentials, kubeconfigs, etcd's data, containerd's
root, the kubelet's root, logs (``logs/``) and the PID files (``run/``).

The modules: :mod:`~devtools.cluster.settings` (names, ports, drivers, the state
directory), :mod:`~devtools.cluster.config` (credentials, kubeconfigs, the kubelet's
configuration), :mod:`~devtools.cluster.machine` (processes, mounts, cgroups),
:mod:`~devtools.cluster.cluster` (:class:`Cluster`: up, down, restart, status),
:mod:`~devtools.cluster.deploy` (the Python driver's manifests, as this cluster applies
them) and :mod:`~devtools.cluster.cli` (``scripts/cluster``).
"""

from __future__ import annotations

from devtools.cluster.cluster import Cluster
from devtools.cluster.machine import machine_snapshot
from devtools.cluster.settings import (
    DRIVERS,
    IMAGE,
    NODE,
    PY_DRIVER,
    PY_DRIVER_SOURCE,
    STATE_ENV,
    ClusterError,
    state_dir,
)

__all__ = [
    "DRIVERS",
    "IMAGE",
    "NODE",
    "PY_DRIVER",
    "PY_DRIVER_SOURCE",
    "STATE_ENV",
    "Cluster",
    "ClusterError",
    "machine_snapshot",
    "state_dir",
]
