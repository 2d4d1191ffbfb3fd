"""Write the sample metadata tree in ``examples/dra-device-attributes/``.

The tree is what a pod with these claims would see under
``/var/run/kubernetes.io/dra-device-attributes``, each file written with
:func:`dra_metadata.encode` exactly as the Go kubelet plugin writes it:

* ``resourceclaimtemplates/gpu/gpu``: two GPUs from a ResourceClaimTemplate
  (``gpu.example.com``; v1beta1 then v1alpha1);
* ``resourceclaims/vfio-gpu/gpu``: a VFIO pass-through GPU from a direct claim,
  written by an older driver in v1alpha1 only;
* ``resourceclaims/cpus/cpus``: CPUs from ``dra.cpu``, v1beta1 only;
* ``resourceclaims/nic/eth``: an SR-IOV virtual function whose network data was
  filled in later (generation 2);
* ``resourceclaims/train/accel``: one request served by two drivers (a GPU and
  the RDMA NIC next to it);
* ``resourceclaimtemplates/inference/gpu``: a prioritized-list subrequest
  (``gpu/high-memory``) that lives in the ``gpu`` directory.

Run ``python examples/make_sample_tree.py [ROOT]`` to (re)write it; the test
suite checks that the committed tree equals a fresh one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import dra_metadata as dm

A = dm.DeviceAttribute
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, "dra-device-attributes")


def _meta(name: str, uid: str, generation: int = 1) -> dm.ObjectMeta:
    return dm.ObjectMeta(name=name, namespace="ml-team", uid=uid, generation=generation)


def sample_files() -> dict[str, bytes]:
    """Relative path -> file content, for every file of the sample tree."""
    files: dict[str, bytes] = {}

    gpus = dm.DeviceMetadata(
        metadata=_meta("trainer-0-gpu-x7k2p", "3f2b9c1e-7a4d-4e8b-9c2a-1d5e6f7a8b90"),
        pod_claim_name="gpu",
        requests=(
            dm.DeviceMetadataRequest(
                "gpu",
                devices=tuple(
                    dm.Device(
                        "gpu.example.com",
                        "worker-1",
                        f"gpu-{index}",
                        attributes={
                            "driverVersion": A(version="570.124.6"),
                            "index": A(int=index),
                            "model": A(string="H100-SXM5-80GB"),
                            "uuid": A(string=uuid),
                        },
                    )
                    for index, uuid in enumerate(
                        (
                            "GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11",
                            "GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22",
                        )
                    )
                ),
            ),
        ),
    )
    files["resourceclaimtemplates/gpu/gpu/gpu.example.com-metadata.json"] = dm.encode(gpus)

    vfio = dm.DeviceMetadata(
        metadata=_meta("vfio-gpu", "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"),
        requests=(
            dm.DeviceMetadataRequest(
                "gpu",
                devices=(
                    dm.Device(
                        "vfio.gpu.example.com",
                        "worker-1",
                        "gpu-3",
                        attributes={
                            "productName": A(string="NVIDIA A100-PCIE-40GB"),
                            "resource.kubernetes.io/numaNode": A(int=1),
                            "resource.kubernetes.io/pciBusID": A(string="0000:af:00.0"),
                            "resource.kubernetes.io/pcieRoot": A(string="pci0000:ae"),
                            "uuid": A(string="GPU-5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716"),
                        },
                    ),
                ),
            ),
        ),
    )
    files["resourceclaims/vfio-gpu/gpu/vfio.gpu.example.com-metadata.json"] = dm.encode(
        vfio, [dm.V1ALPHA1]
    )

    cpus = dm.DeviceMetadata(
        metadata=_meta("cpus", "0c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f"),
        requests=(
            dm.DeviceMetadataRequest(
                "cpus",
                devices=tuple(
                    dm.Device(
                        "dra.cpu",
                        "worker-1",
                        f"cpu-{cpu}",
                        attributes={
                            "coreID": A(int=cpu // 2),
                            "cpuID": A(int=cpu),
                            "numaNodeID": A(int=0),
                            "smtEnabled": A(bool=True),
                        },
                    )
                    for cpu in range(4)
                ),
            ),
        ),
    )
    files["resourceclaims/cpus/cpus/dra.cpu-metadata.json"] = dm.encode(cpus, [dm.V1BETA1])

    nic = dm.DeviceMetadata(
        metadata=_meta("nic", "7d6c5b4a-3928-4716-a5b4-c3d2e1f0a9b8", generation=2),
        requests=(
            dm.DeviceMetadataRequest(
                "eth",
                devices=(
                    dm.Device(
                        "sriov.example.com",
                        "worker-1",
                        "enp94s0f0v3",
                        attributes={
                            "pfName": A(string="enp94s0f0"),
                            "resource.kubernetes.io/numaNode": A(ints=(1, 0)),
                            "resource.kubernetes.io/pciBusID": A(string="0000:5e:00.3"),
                            "resource.kubernetes.io/pcieRoot": A(string="pci0000:5d"),
                            "vfIndex": A(int=3),
                        },
                        network_data=dm.NetworkDeviceData(
                            interface_name="net1",
                            ips=("10.20.30.41/24", "fd00:10:20::29/64"),
                            hardware_address="52:54:00:ab:cd:03",
                        ),
                    ),
                ),
            ),
        ),
    )
    files["resourceclaims/nic/eth/sriov.example.com-metadata.json"] = dm.encode(nic)

    train_meta = _meta("train", "5b4a3928-1706-4e5d-9c8b-7a6f5e4d3c2b")
    train_gpu = dm.DeviceMetadata(
        metadata=train_meta,
        requests=(
            dm.DeviceMetadataRequest(
                "accel",
                devices=(
                    dm.Device(
                        "gpu.example.com",
                        "worker-2",
                        "gpu-0",
                        attributes={
                            "index": A(int=0),
                            "resource.kubernetes.io/pcieRoot": A(string="pci0000:17"),
                            "uuid": A(string="GPU-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
                        },
                    ),
                ),
            ),
        ),
    )
    train_nic = dm.DeviceMetadata(
        metadata=train_meta,
        requests=(
            dm.DeviceMetadataRequest(
                "accel",
                devices=(
                    dm.Device(
                        "rdma.example.com",
                        "worker-2",
                        "mlx5-0",
                        attributes={
                            "resource.kubernetes.io/pcieRoot": A(string="pci0000:17"),
                            "rdmaDevice": A(string="mlx5_0"),
                        },
                        network_data=dm.NetworkDeviceData(interface_name="rdma0"),
                    ),
                ),
            ),
        ),
    )
    files["resourceclaims/train/accel/gpu.example.com-metadata.json"] = dm.encode(train_gpu)
    files["resourceclaims/train/accel/rdma.example.com-metadata.json"] = dm.encode(train_nic)

    inference = dm.DeviceMetadata(
        metadata=_meta("inference-0-gpu-q9w8e", "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d"),
        pod_claim_name="inference",
        requests=(
            dm.DeviceMetadataRequest(
                "gpu/high-memory",
                devices=(
                    dm.Device(
                        "gpu.example.com",
                        "worker-3",
                        "gpu-2",
                        attributes={
                            "index": A(int=2),
                            "memory": A(string="141Gi"),
                            "model": A(string="H200"),
                            "uuid": A(string="GPU-2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"),
                        },
                    ),
                ),
            ),
        ),
    )
    files["resourceclaimtemplates/inference/gpu/gpu.example.com-metadata.json"] = dm.encode(
        inference
    )
    return files


def write_tree(root: str) -> list[str]:
    """Write the sample files under ``root`` (files 0644, directories 0755); return their paths."""
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
    root = args[0] if args else DEFAULT_ROOT
    for path in write_tree(root):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
