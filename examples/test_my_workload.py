"""Testing workload code that reads DRA device metadata, without a cluster.

Installing ``dra-metadata`` gives pytest the fixtures ``dra_metadata_tree`` (a
fake tree, ``DRA_METADATA_ROOT`` pointing at it) and ``dra_metadata_mounted_tree``
(the same seen through real read-only bind mounts, as in a container; skipped
where mounts cannot be made). Run::

    python -m pytest examples/test_my_workload.py

The "workload" is the two functions at the top; in a real project they live in
the application and the tests import them.
"""

from __future__ import annotations

import pytest

import dra_metadata as dm
from dra_metadata.testing import MetadataTree, MountedMetadataTree


def visible_gpus() -> list[str]:
    """The workload: the UUIDs of the GPUs of the pod's ``gpu`` claim, in index order."""
    md = dm.read_resource_claim_template("gpu", "gpu")
    devices = sorted(md.requests[0].devices, key=lambda d: d.attribute("index") or 0)
    return [str(d.attribute("uuid")) for d in devices]


def test_my_job_picks_the_right_gpus(dra_metadata_tree: MetadataTree) -> None:
    """The job sees the claim's GPUs in index order."""
    gpus = dra_metadata_tree.template_claim("gpu").request("gpu")
    gpus.device("gpu.example.com", "worker-0", "gpu-1", uuid="GPU-bbbb", index=1)
    gpus.device("gpu.example.com", "worker-0", "gpu-0", uuid="GPU-aaaa", index=0)
    dra_metadata_tree.write()
    assert visible_gpus() == ["GPU-aaaa", "GPU-bbbb"]


def nic_address() -> str | None:
    """The workload: the NIC's first IP, or None while its network data is not there yet."""
    md = dm.read_resource_claim("nic", "eth")
    net = md.requests[0].devices[0].network_data
    return net.ips[0] if net is not None and net.ips else None


def test_network_data_arrives_later(dra_metadata_tree: MetadataTree) -> None:
    """The NIC's address is None until the driver adds network data (generation 2)."""
    tree = dra_metadata_tree
    nic = tree.claim("nic").request("eth").device("sriov.example.com", "node-a", "vf-3")
    tree.write()
    assert nic_address() is None
    nic.network(interface_name="net1", ips=["10.0.0.5/24"])
    tree.update(mode="in-place")  # generation 2, as a Go v1.36 driver rewrites it
    assert nic_address() == "10.0.0.5/24"


def test_half_written_file_is_a_decode_error(dra_metadata_tree: MetadataTree) -> None:
    """A read racing the driver's in-place write fails clearly instead of giving half a NIC."""
    tree = dra_metadata_tree
    nic = tree.claim("nic").request("eth").device("sriov.example.com", "node-a", "vf-3")
    tree.write()
    tree.tear(nic)
    with pytest.raises(dm.DecodeError):
        nic_address()


def test_inside_a_container(dra_metadata_mounted_tree: MountedMetadataTree) -> None:
    """Through a read-only bind mount, as in a pod, the job reads the same answer."""
    tree = dra_metadata_mounted_tree
    tree.template_claim("gpu").request("gpu").device(
        "gpu.example.com", "worker-0", "gpu-0", uuid="GPU-aaaa", index=0
    )
    tree.write()
    assert visible_gpus() == ["GPU-aaaa"]
