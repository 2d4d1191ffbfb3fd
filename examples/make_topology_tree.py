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

It also writes ``examples/real-drivers-tree/``, the same kind of pod on a
two-socket node, with every driver's attribute set as it publishes it today:

* ``resourceclaims/gpus/gpu``: an AMD GPU and an AMD pass-through (VFIO) GPU
  from ``gpu.amd.com`` (ROCm/k8s-gpu-dra-driver ``docs/driver-attributes.md``:
  ``type``, ``deviceID``, ``productName``, ``driverVersion``, ``numaNode`` in
  the driver's domain, the standard ``pciBusID`` and ``pcieRoot``; the VFIO
  device's ``pciAddr``, ``iommuGroup``, ``isVF``, ``vendorID``; no ``uuid``);
* ``resourceclaimtemplates/cuda/gpu``: an NVIDIA GPU and a MIG device of
  another GPU from ``gpu.nvidia.com`` (NVIDIA/k8s-dra-driver-gpu
  ``cmd/gpu-kubelet-plugin/deviceinfo.go``: ``uuid``, the MIG device's
  ``parentUUID`` and ``profile``, ``pcieBusID`` in NVML's form, the standard
  ``pcieRoot``; no NUMA attribute);
* ``resourceclaims/vf/net``: two SR-IOV VFs from
  ``sriovnetwork.k8snetworkplumbingwg.io`` (k8snetworkplumbingwg/dra-driver-sriov
  ``pkg/consts/consts.go``: ``pciAddress``, ``PFName``, ``vendor``,
  ``deviceID``, ``vfID``, ``resourceName``, ``linkType``, ``rdmaCapable``,
  ``pfPciAddress``, the standard ``pciBusID`` and ``pcieRoot``, and
  ``dra.net/numaNode``) with network data;
* ``resourceclaims/rdma/nic``: an RDMA NIC from ``dra.net`` next to the NVIDIA
  GPU, its attributes named in the driver's domain as dranet names them
  (kubernetes-sigs/dranet ``pkg/apis/attributes.go``: ``dra.net/ifName``,
  ``dra.net/pciAddress``, ``dra.net/numaNode``, ``dra.net/rdma``,
  ``dra.net/rdmaDevice`` ...; ``pkg/inventory/db.go`` adds the standard
  ``numaNode``, here in its list form, and ``pcieRoot``), with network data;
* ``resourceclaims/cpus/cpus``: two grouped CPU devices from ``dra.cpu``, one
  per NUMA node (``numCPUs``, ``numaNodeID``, ``socketID``, ``smtEnabled``,
  ``dra.net/numaNode``, the standard ``numaNode`` and a ``pcieRoot`` list).

Run ``python examples/make_topology_tree.py [ROOT [REAL_ROOT]]`` to (re)write
them; the test suite checks that the committed trees equal fresh ones.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import dra_metadata as dm

A = dm.DeviceAttribute
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, "topology-tree")
REAL_DRIVERS_ROOT = os.path.join(HERE, "real-drivers-tree")
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


def _claim(
    name: str,
    uid: str,
    request: str,
    devices: tuple[dm.Device, ...],
    pod_claim_name: str | None = None,
) -> dm.DeviceMetadata:
    """A claim's metadata with one request of ``devices``."""
    return dm.DeviceMetadata(
        metadata=_meta(name, uid),
        pod_claim_name=pod_claim_name,
        requests=(dm.DeviceMetadataRequest(request, devices=devices),),
    )


def sample_files() -> dict[str, bytes]:
    """Relative path -> file content, for every file of the topology tree."""
    gpus = _claim(
        "trainer-0-gpus-h4x9t",
        "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6",
        "gpu",
        tuple(
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
        pod_claim_name="gpus",
    )
    nics = _claim(
        "rdma",
        "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2910",
        "nic",
        tuple(
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
    )
    cpus = _claim(
        "cpus",
        "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901",
        "cpus",
        tuple(
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
    )
    return {
        "resourceclaimtemplates/gpus/gpu/gpu.nvidia.com-metadata.json": dm.encode(gpus),
        "resourceclaims/rdma/nic/dra.net-metadata.json": dm.encode(nics),
        "resourceclaims/cpus/cpus/dra.cpu-metadata.json": dm.encode(cpus),
    }


AMD_GPU = "gpu.amd.com"
SRIOV = "sriovnetwork.k8snetworkplumbingwg.io"
#: NUMA node -> the PCIe roots local to it on the real-drivers node.
AMD_ROOTS = {
    0: ("pci0000:00", "pci0000:15", "pci0000:29"),
    1: ("pci0000:80", "pci0000:97", "pci0000:a9"),
}
NVIDIA = "gpu.nvidia.com"
#: The NVIDIA attributes every device of one GPU shares (deviceinfo.go).
NVIDIA_H100 = {
    "addressingMode": A(string="None"),
    "architecture": A(string="Hopper"),
    "brand": A(string="Nvidia"),
    "cudaComputeCapability": A(version="9.0.0"),
    "cudaDriverVersion": A(version="12.8.0"),
    "driverVersion": A(version="570.124.6"),
    "productName": A(string="NVIDIA H100 80GB HBM3"),
}
DRANET = "dra.net/"
VFS = (
    # name, VF address, PF address, PCIe root, NUMA node, interface, IP, MAC
    ("0000-1d-00-2", "0000:1d:00.2", "0000:1d:00.0", "pci0000:15", 0, "net1", "10.30.1.5/24",
     "7e:2a:11:00:01:05"),
    ("0000-9f-00-2", "0000:9f:00.2", "0000:9f:00.0", "pci0000:97", 1, "net2", "10.30.2.5/24",
     "7e:2a:11:00:02:05"),
)  # fmt: skip


def real_driver_files() -> dict[str, bytes]:
    """Relative path -> file content, for every file of the real-drivers tree."""
    gpus = _claim(
        "mi300-gpus",
        "0c1d2e3f-4a5b-4c6d-8e7f-90a1b2c3d4e5",
        "gpu",
        (
            dm.Device(
                AMD_GPU,
                "node-b",
                "gpu-0-128",
                attributes={
                    "deviceID": A(string="0x74a1"),
                    "driverVersion": A(version="6.10.5"),
                    "numaNode": A(int=0),
                    "partitionProfile": A(string="spx_nps1"),
                    "productName": A(string="AMD_Instinct_MI300X_OAM"),
                    "type": A(string="amdgpu"),
                    STD + "pciBusID": A(string="0000:1b:00.0"),
                    STD + "pcieRoot": A(string="pci0000:15"),
                },
            ),
            dm.Device(
                AMD_GPU,
                "node-b",
                "gpu-vfio-1",
                attributes={
                    "deviceID": A(string="0x74a1"),
                    "iommuGroup": A(string="71"),
                    "isVF": A(bool=False),
                    "numaNode": A(int=1),
                    "pciAddr": A(string="0000:9d:00.0"),
                    "productName": A(string="AMD_Instinct_MI300X_OAM"),
                    "type": A(string="vfio"),
                    "vendorID": A(string="0x1002"),
                    STD + "pcieRoot": A(string="pci0000:97"),
                },
            ),
        ),
    )
    vfs = _claim(
        "vf",
        "6e5f4a3b-2c1d-4e0f-9a8b-7c6d5e4f3a21",
        "net",
        tuple(
            dm.Device(
                SRIOV,
                "node-b",
                name,
                attributes={
                    "EswitchMode": A(string="legacy"),
                    "PFName": A(string=f"ens{index + 1}f0np0"),
                    "deviceID": A(string="101e"),
                    "linkType": A(string="ether"),
                    "pciAddress": A(string=vf),
                    "pfDeviceID": A(string="101d"),
                    "pfPciAddress": A(string=pf),
                    "rdmaCapable": A(bool=True),
                    "resourceName": A(string="sriov_rdma"),
                    "vendor": A(string="15b3"),
                    "vfID": A(int=2),
                    "dra.net/numaNode": A(int=numa),
                    STD + "pciBusID": A(string=vf),
                    STD + "pcieRoot": A(string=root),
                },
                network_data=dm.NetworkDeviceData(
                    interface_name=interface, ips=(ip,), hardware_address=mac
                ),
            )
            for index, (name, vf, pf, root, numa, interface, ip, mac) in enumerate(VFS)
        ),
    )
    cpus = _claim(
        "cpus",
        "4d3c2b1a-0f9e-4d8c-9b7a-6f5e4d3c2b1a",
        "cpus",
        tuple(
            dm.Device(
                "dra.cpu",
                "node-b",
                f"cpudevnuma{numa:03d}",
                attributes={
                    "numCPUs": A(int=48),
                    "numaNodeID": A(int=numa),
                    "smtEnabled": A(bool=True),
                    "socketID": A(int=numa),
                    "dra.net/numaNode": A(int=numa),
                    STD + "numaNode": A(int=numa),
                    STD + "pcieRoot": A(strings=AMD_ROOTS[numa]),
                },
            )
            for numa in (0, 1)
        ),
    )
    cuda = _claim(
        "trainer-0-cuda-7kq2m",
        "3a4b5c6d-7e8f-4901-a2b3-c4d5e6f7a8b9",
        "gpu",
        (
            dm.Device(
                NVIDIA,
                "node-b",
                "gpu-2",
                attributes={
                    **NVIDIA_H100,
                    "pcieBusID": A(string="00000000:2A:00.0"),
                    "type": A(string="gpu"),
                    "uuid": A(string="GPU-1d2c3b4a-5f6e-4d7c-8b9a-0a1b2c3d4e5f"),
                    STD + "pcieRoot": A(string="pci0000:29"),
                },
            ),
            dm.Device(
                NVIDIA,
                "node-b",
                "gpu-3-mig-19-0-1",
                attributes={
                    **NVIDIA_H100,
                    "parentUUID": A(string="GPU-6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d"),
                    "pcieBusID": A(string="00000000:AA:00.0"),
                    "profile": A(string="1g.10gb"),
                    "type": A(string="mig"),
                    "uuid": A(string="MIG-2b3c4d5e-6f70-5182-93a4-b5c6d7e8f901"),
                    STD + "pcieRoot": A(string="pci0000:a9"),
                },
            ),
        ),
        pod_claim_name="cuda",
    )
    nic = _claim(
        "rdma",
        "8a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d",
        "nic",
        (
            dm.Device(
                "dra.net",
                "node-b",
                "ens3f0np0",
                attributes={
                    DRANET + "encapsulation": A(string="ether"),
                    DRANET + "ifName": A(string="ens3f0np0"),
                    DRANET + "mac": A(string="b8:3f:d2:bb:03:05"),
                    DRANET + "mtu": A(int=9000),
                    DRANET + "numaNode": A(int=0),
                    DRANET + "pciAddress": A(string="0000:2b:00.0"),
                    DRANET + "pciDevice": A(string="MT2910 Family [ConnectX-7]"),
                    DRANET + "pciVendor": A(string="Mellanox Technologies"),
                    DRANET + "rdma": A(bool=True),
                    DRANET + "rdmaDevice": A(string="mlx5_2"),
                    DRANET + "sriov": A(bool=False),
                    DRANET + "state": A(string="up"),
                    DRANET + "type": A(string="device"),
                    DRANET + "virtual": A(bool=False),
                    STD + "numaNode": A(ints=(0,)),
                    STD + "pcieRoot": A(string="pci0000:29"),
                },
                network_data=dm.NetworkDeviceData(
                    interface_name="net3",
                    ips=("10.40.1.5/24",),
                    hardware_address="b8:3f:d2:bb:03:05",
                ),
            ),
        ),
    )
    return {
        "resourceclaims/gpus/gpu/gpu.amd.com-metadata.json": dm.encode(gpus),
        f"resourceclaims/vf/net/{SRIOV}-metadata.json": dm.encode(vfs),
        "resourceclaims/rdma/nic/dra.net-metadata.json": dm.encode(nic),
        "resourceclaims/cpus/cpus/dra.cpu-metadata.json": dm.encode(cpus),
        f"resourceclaimtemplates/cuda/gpu/{NVIDIA}-metadata.json": dm.encode(cuda),
    }


def write_tree(root: str, files: dict[str, bytes] | None = None) -> list[str]:
    """Write the files (default: the topology tree's) under ``root``; return their paths.

    Files are 0644, directories 0755.
    """
    written = []
    for relative, content in sorted((sample_files() if files is None else files).items()):
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        with open(path, "wb") as out:
            out.write(content)
        os.chmod(path, 0o644)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Write the trees under ``argv[0]`` and ``argv[1]`` (default: next to this script)."""
    args = list(sys.argv[1:] if argv is None else argv)
    for path in write_tree(args[0] if args else DEFAULT_ROOT):
        print(path)
    real = args[1] if len(args) > 1 else REAL_DRIVERS_ROOT
    for path in write_tree(real, real_driver_files()):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
