"""How a DRA driver written in Python publishes device metadata, with MetadataPublisher.

The publisher does what the Go kubelet plugin library (Kubernetes v1.37) does for
a driver that enables device metadata:

1. at ``NodePrepareResources``, :meth:`~dra_metadata.MetadataPublisher.prepare`
   writes one file per claim and base request,
   ``<plugin data dir>/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json``
   (the claim's identity, ``generation: 1``, the request and its devices, encoded
   once per API version, newest first, replaced atomically), and the CDI spec that
   bind-mounts it read-only where the readers look; the driver hands the returned
   CDI device name to the kubelet;
2. when data known only later is there (network data, at the NRI ``RunPodSandbox``
   hook), :meth:`~dra_metadata.MetadataPublisher.update` writes the whole object
   again with ``generation`` + 1, before the containers start;
3. at ``NodeUnprepareResources``, :meth:`~dra_metadata.MetadataPublisher.unprepare`
   removes the files and the spec.

Calls on one claim may come from several threads or processes (the kubelet's
gRPC calls, an NRI hook): the publisher serialises them with a lock file per
claim and keeps the generations growing (docs/driver.md).

Run ``python examples/custom_driver.py [DIR]``: it prepares an SR-IOV VF, adds its
network data, and runs ``dra-metadata lint`` on the file after each step. ``DIR``
plays ``/var/lib/kubelet/plugins`` (default: a temporary directory); the CDI specs
go to ``DIR/cdi`` (``/var/run/cdi`` on a node).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import dra_metadata as dm

DRIVER = "sriov.example.com"


def lint(path: str) -> str:
    """What ``dra-metadata lint`` says about the file, without the file name."""
    done = subprocess.run(
        [sys.executable, "-m", "dra_metadata", "lint", path], capture_output=True, text=True
    )
    return "\n".join(line.removeprefix(f"{path}: ") for line in done.stdout.splitlines())


def main(plugins: str) -> None:
    pub = dm.MetadataPublisher(
        DRIVER, plugin_data_dir=os.path.join(plugins, DRIVER), cdi_dir=os.path.join(plugins, "cdi")
    )
    # What the kubelet's NodePrepareResources call says about the claim.
    claim = dm.ClaimRef(name="nic", namespace="default", uid="7d6c5b4a-3928-4716-a5b4-c3d2e1f0a9b8")
    request = "eth"
    # Plain values become attributes as the testing kit makes them (a str a string, an int
    # an int); what a reader would refuse is a PublishError here, before anything is written.
    attributes: dict[str, str | int] = {
        "pfName": "enp94s0f0",
        "vfIndex": 3,
        "resource.kubernetes.io/pciBusID": "0000:5e:00.3",
    }
    path = pub.metadata_path(claim, request)

    # 1: prepare. Identity now, network data later.
    cdi_device = pub.prepare(claim, request, [pub.device("node-a", "vf-3", attributes=attributes)])
    with open(pub.cdi_spec_path(claim, request), encoding="utf-8") as spec_file:
        (mount,) = json.load(spec_file)["devices"][0]["containerEdits"]["mounts"]
    assert cdi_device == f"{DRIVER}/metadata={claim.uid}_{request}"  # for the kubelet
    print(f"prepare: {os.path.relpath(path, plugins)} (generation 1)")
    print(f"  CDI mount: {mount['containerPath']} ({','.join(mount['options'])})")
    print(f"  dra-metadata lint: {lint(path)}")

    # 2: the network is ready (NRI RunPodSandbox): everything again, generation 2.
    network = dm.NetworkDeviceData(
        interface_name="net1", ips=("10.20.30.41/24",), hardware_address="52:54:00:ab:cd:03"
    )
    vf = pub.device("node-a", "vf-3", attributes=attributes, network_data=network)
    generation = pub.update(claim, request, [vf]).metadata.generation
    print(f"network ready: {os.path.relpath(path, plugins)} (generation {generation})")
    print(f"  dra-metadata lint: {lint(path)}")
    # 3 (NodeUnprepareResources) would be pub.unprepare(claim); the files stay for a look.


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(scratch)
