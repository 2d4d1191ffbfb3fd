"""Write the topology sample tree in ``examples/topology-tree/``.

A training pod on a two-socket-node-with-one-socket-in-two-NUMA-nodes (sub-NUMA
clustering) machine, as its container sees it under
``/var/run/kubernetes.io/dra-device-attributes``, with the attribute sets
the real drivers publish today:

* ``resourceclaimtemplates/gpus/gpu``: two NVIDIA GPUs (``gpu.nvidia.com``,
  NVIDIA/k8s-dra-driver-gpu ``cmd/gpu-kubelet-plugin/deviceinfo.go``:
  ``type``, ``uuid``, ``productName``, ``brand``, ``architecture``, the
  versions, ``pcieBusID`` in NVML's eight-digit domain form and the standard
  ``pcieRoot``; no NUMA attribute for a full GPU);
* ``resourceclaims/rdma/nic``: two NICs from ``dra.net`` (kubernetes-sigs/dranet
  ``pkg/apis/attributes.go``: ``ifName``, ``pciAddress``, ``numaNode``,
  ``rdmaDevice`` and the standard ``pcieRoot``) with network data, one under
  each GPU's PCIe root;
* ``resourceclaims/cpus/cpus``: four CPUs from ``dra.cpu``
  (kubernetes-sigs/dra-driver-cpu ``pkg/device/attributes.go``: ``cpuID``,
  ``coreID``, ``numaNodeID``, ``socketID``, ``smtEnabled``, the
  ``dra.net/numaNode`` it keeps for compatibility, and the standard int
  ``numaNode`` and ``pcieRoot`` list of every root local to the CPU's NUMA
  node), two on each NUMA node.

Run ``python examples/make_topology_tree.py [ROOT]`` to (re)write it; the test
suite checks that the committed tree equals a fresh one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import dra_metadata as dm

A = dm.DeviceAttribute
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, "topology-tree")
STD = dm.STANDARD_DOMAIN + "/"

GPUS = (
    # name, uuid, NVML bus id, PCIe root
    ("gpu-0", "GPU-4a1c2e3f-5b6d-4e7f-8091-a2b3c4d5e6f7", "00000000:18:00.0", "pci0000:17"),
    ("gpu-1", "GPU-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", "00000000:86:00.0", "pci0000:85"),
)
NICS = (
    # ifName on the node, PCI address, PCIe root, NUMA node, interface in the pod, IPs, MAC
    ("ens1f0", "0000:19:00.0", "pci0000:17", 0, "net1", ("10.10.1.5/24",), "b8:3f:d2:aa:01:05"),
    ("ens2f0", "0000:87:00.0", "pci0000:85", 1, "net2", ("10.10.2.5/24",), "b8:3f:d2:aa:02:05"),
)
CPUS = ((0, 0), (1, 0), (16, 1), (17, 1))  # cpuID, NUMA node (all on socket 0)
#: NUMA node -> the PCIe roots local to it (what dra-driver-cpu lists).
ROOTS = {0: ("pci0000:00", "pci0000:17"), 1: ("pci0000:80", "pci0000:85")}


def _meta(name: str, uid: str) -> dm.ObjectMeta:
    return dm.ObjectMeta(name=name, namespace="ml-team", uid=uid, generation=1)


def sample_files() -> dict[str, bytes]:
    """Relative path -> file content, for every file of the topology tree."""
    gpus = dm.DeviceMetadata(
        metadata=_meta("trainer-0-gpus-h4x9t", "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"),
        pod_claim_name="gpus",
        requests=(
            dm.DeviceMetadataRequest(
                "gpu",
                devices=tuple(
                    dm.Device(
                        "gpu.nvidia.com",
                        "node-a",
                        name,
                        attributes={
                            "addressingMode": A(string="None"),
                            "architecture": A(string="Hopper"),
                            "brand": A(string="Nvidia"),
                            "cudaComputeCapability": A(version="9.0.0"),
                            "cudaDriverVersion": A(version="12.8.0"),
                            "driverVersion": A(version="570.124.6"),
                            "productName": A(string="NVIDIA H100 80GB HBM3"),
                            "pcieBusID": A(string=bus),
                            "type": A(string="gpu"),
                            "uuid": A(string=uuid),
                            STD + "pcieRoot": A(string=root),
                        },
                    )
                    for name, uuid, bus, root in GPUS
                ),
            ),
        ),
    )
    nics = dm.DeviceMetadata(
        metadata=_meta("rdma", "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2910"),
        requests=(
            dm.DeviceMetadataRequest(
                "nic",
                devices=tuple(
                    dm.Device(
                        "dra.net",
                        "node-a",
                        name,
                        attributes={
                            "ifName": A(string=name),
                            "numaNode": A(int=numa),
                            "pciAddress": A(string=pci),
                            "rdmaDevice": A(string=f"mlx5_{index}"),
                            STD + "pcieRoot": A(string=root),
                        },
                        network_data=dm.NetworkDeviceData(
                            interface_name=interface, ips=ips, hardware_address=mac
                        ),
                    )
                    for index, (name, pci, root, numa, interface, ips, mac) in enumerate(NICS)
                ),
            ),
        ),
    )
    cpus = dm.DeviceMetadata(
        metadata=_meta("cpus", "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901"),
        requests=(
            dm.DeviceMetadataRequest(
                "cpus",
                devices=tuple(
                    dm.Device(
                        "dra.cpu",
                        "node-a",
                        f"cpu-{cpu}",
                        attributes={
                            "coreID": A(int=cpu),
                            "cpuID": A(int=cpu),
                            "numaNodeID": A(int=numa),
                            "smtEnabled": A(bool=False),
                            "socketID": A(int=0),
                            "dra.net/numaNode": A(int=numa),
                            STD + "numaNode": A(int=numa),
                            STD + "pcieRoot": A(strings=ROOTS[numa]),
                        },
                    )
                    for cpu, numa in CPUS
                ),
            ),
        ),
    )
    return {
        "resourceclaimtemplates/gpus/gpu/gpu.nvidia.com-metadata.json": dm.encode(gpus),
        "resourceclaims/rdma/nic/dra.net-metadata.json": dm.encode(nics),
        "resourceclaims/cpus/cpus/dra.cpu-metadata.json": dm.encode(cpus),
    }


def write_tree(root: str) -> list[str]:
    """Write the files under ``root`` (files 0644, directories 0755); return their paths."""
    written = []
    for relative, content in sorted(sample_files().items()):
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        with open(path, "wb") as out:
            out.write(content)
        os.chmod(path, 0o644)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Write the tree under ``argv[0]`` (default: next to this script)."""
    args = list(sys.argv[1:] if argv is None else argv)
    for path in write_tree(args[0] if args else DEFAULT_ROOT):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
