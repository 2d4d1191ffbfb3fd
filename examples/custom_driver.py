"""How a DRA driver that does not use the Go kubelet plugin library writes device metadata.

The recipe, as the Go library (Kubernetes v1.37) does it:

1. at ``NodePrepareResources``, one file per claim and base request:
   ``<plugin data dir>/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json``
   holding the claim's ``name``, ``namespace``, ``uid`` and ``generation: 1``,
   ``podClaimName`` when the claim was made from a template, and one request
   (its full name, ``req/sub`` included) with the driver's devices;
2. the object encoded once per API version, newest first (:func:`dra_metadata.encode`
   gives Go's bytes), written to a temporary file and renamed over the target,
   mode ``0644`` (directories ``0755``);
3. a CDI mount of that one file, read-only, at the container path the readers use;
4. deferred data (network) later: the whole object again, ``generation`` + 1,
   before the containers start.

Run ``python examples/custom_driver.py [DIR]``: it prepares an SR-IOV VF, adds its
network data, and runs ``dra-metadata lint`` on the file after each step. ``DIR``
plays ``/var/lib/kubelet/plugins`` (default: a temporary directory).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import dra_metadata as dm

DRIVER = "sriov.example.com"
#: Where a container finds the file: the path the readers build (dra_metadata's default root).
CONTAINER_ROOT = dm.CONTAINER_DIR


def host_path(plugins: str, namespace: str, claim: str, request: str) -> str:
    """The node-side file of one claim's base request, in the kubelet plugin's layout."""
    base = request.partition("/")[0]
    return os.path.join(
        plugins, DRIVER, "dra-device-metadata", f"{namespace}_{claim}", base, "metadata.json"
    )


def container_path(claim: str, request: str, pod_claim_name: str | None) -> str:
    """Where the container reads it: the CDI mount's containerPath."""
    if pod_claim_name:
        return dm.resource_claim_template_file_path(
            DRIVER, pod_claim_name, request, root=CONTAINER_ROOT
        )
    return dm.resource_claim_file_path(DRIVER, claim, request, root=CONTAINER_ROOT)


def write_atomically(path: str, data: bytes) -> None:
    """Temp file in the same directory, 0644, fsync, rename over the target (Go v1.37)."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), 0o644)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def claim_metadata(
    *, name: str, namespace: str, uid: str, generation: int, request: str, vf: dm.Device
) -> dm.DeviceMetadata:
    """The object for one claim's request, as the kubelet plugin library builds it."""
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name=name, namespace=namespace, uid=uid, generation=generation),
        requests=(dm.DeviceMetadataRequest(request, (vf,)),),
    )


def lint(path: str) -> str:
    """What ``dra-metadata lint`` says about the file, without the file name."""
    done = subprocess.run(
        [sys.executable, "-m", "dra_metadata", "lint", path], capture_output=True, text=True
    )
    return "\n".join(line.removeprefix(f"{path}: ") for line in done.stdout.splitlines())


def main(plugins: str) -> None:
    claim = {"name": "nic", "namespace": "default", "uid": "7d6c5b4a-3928-4716-a5b4-c3d2e1f0a9b8"}
    request = "eth"
    vf = dm.Device(
        DRIVER,
        "node-a",
        "vf-3",
        attributes={
            "pfName": dm.DeviceAttribute(string="enp94s0f0"),
            "resource.kubernetes.io/pciBusID": dm.DeviceAttribute(string="0000:5e:00.3"),
        },
    )
    path = host_path(plugins, claim["namespace"], claim["name"], request)

    # 1-3: prepare. Identity now, network data later.
    md = claim_metadata(**claim, generation=1, request=request, vf=vf)
    write_atomically(path, dm.encode(md, [dm.V1BETA1, dm.V1ALPHA1]))
    mount = {
        "hostPath": path,
        "containerPath": container_path(claim["name"], request, md.pod_claim_name),
        "options": ["ro", "bind"],
    }
    print(f"prepare: {os.path.relpath(path, plugins)} (generation 1)")
    print(f"  CDI mount: {mount['containerPath']} ({','.join(mount['options'])})")
    print(f"  dra-metadata lint: {lint(path)}")

    # 4: the network is ready (NRI RunPodSandbox): everything again, generation 2.
    network = dm.NetworkDeviceData(
        interface_name="net1", ips=("10.20.30.41/24",), hardware_address="52:54:00:ab:cd:03"
    )
    vf = dm.Device(vf.driver, vf.pool, vf.name, attributes=vf.attributes, network_data=network)
    md = claim_metadata(**claim, generation=2, request=request, vf=vf)
    write_atomically(path, dm.encode(md, [dm.V1BETA1, dm.V1ALPHA1]))
    print(f"network ready: {os.path.relpath(path, plugins)} (generation 2)")
    print(f"  dra-metadata lint: {lint(path)}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(scratch)
