"""What an ML training job does with its device metadata.

The job's pod has a GPU claim from a ResourceClaimTemplate (``gpu``), a direct
claim for an SR-IOV NIC (``nic``) and a CPU claim (``cpus``). At start-up it:

1. lists its GPUs (UUID, model, PCI address, NUMA node) and derives
   ``CUDA_VISIBLE_DEVICES`` from the UUIDs;
2. finds the NIC's interface name and IPs for its collective-communication
   library, or says that the network data is not there yet;
3. says which GPU the prioritized request of its inference claim got;
4. pins itself to the CPUs it was given when they sit on one NUMA node, and
   says which NUMA node the NIC is on: the physical one, a ``numaNode`` list's
   first element (KEP-6072), not every node the list names.

Run it against the sample tree::

    DRA_METADATA_ROOT=examples/dra-device-attributes python examples/ml_workload.py

In a real pod, leave ``DRA_METADATA_ROOT`` unset.
"""

from __future__ import annotations

import sys

import dra_metadata as dm


def gpu_report() -> list[str]:
    """One line per GPU of the template claim ``gpu``, plus CUDA_VISIBLE_DEVICES."""
    md = dm.read_resource_claim_template("gpu", "gpu")
    lines = []
    uuids = []
    for request, gpu in md.devices():
        uuid = gpu.attribute("uuid")
        uuids.append(str(uuid))
        lines.append(
            f"{request.name}: {gpu.driver}/{gpu.pool}/{gpu.name} uuid={uuid} "
            f"model={gpu.attribute('model')} driverVersion={gpu.attribute('driverVersion')} "
            f"index={gpu.attribute('index')}"
        )
    lines.append("CUDA_VISIBLE_DEVICES=" + ",".join(uuids))
    return lines


def vfio_report() -> list[str]:
    """The pass-through GPU of the direct claim ``vfio-gpu``: where it sits on the PCI bus."""
    md = dm.read_resource_claim("vfio-gpu", "gpu")
    return [
        f"vfio {gpu.name}: pci={gpu.pci_bus_id} root={gpu.pcie_root} numa={gpu.numa_node} "
        f"product={gpu.attribute('productName')}"
        for _, gpu in md.devices()
    ]


def inference_report() -> list[str]:
    """Which GPU the prioritized request ``gpu`` of template claim ``inference`` got.

    Asking for ``gpu`` answers whatever subrequest was allocated, and says which;
    asking for ``gpu/high-memory`` would be a not-found naming the allocated one
    when another was (the same answer from every reader and every command).
    """
    md = dm.read_resource_claim_template("inference", "gpu")
    return [
        f"inference {request.name}: {gpu.name} memory={gpu.attribute('memory')}"
        for request, gpu in md.devices()
    ]


def network_report() -> list[str]:
    """The NIC's interface and addresses, or a note that they are not there yet."""
    md = dm.read_resource_claim("nic", "eth")
    lines = []
    for _, nic in md.devices():
        net = nic.network_data
        if net is None or not net.interface_name:
            generation = md.generations[nic.driver]
            lines.append(f"nic {nic.name}: no network data yet (generation {generation})")
            continue
        lines.append(
            f"nic {nic.name}: {net.interface_name} ips={','.join(net.ips)} "
            f"mac={net.hardware_address} numa={nic.numa_node} "
            f"(local to nodes {','.join(map(str, nic.numa_nodes))})"
        )
    return lines


def cpu_report() -> list[str]:
    """The CPUs of claim ``cpus`` and whether they share one NUMA node."""
    md = dm.read_resource_claim("cpus", "cpus", driver="dra.cpu")
    # require(): the value, or an error naming the device and what it has instead
    cpus = sorted(int(str(dev.require("cpuID"))) for _, dev in md.devices())
    nodes = {dev.numa_node for _, dev in md.devices()}  # from dra.cpu/numaNodeID here
    where = (
        f"NUMA node {nodes.pop()}" if len(nodes) == 1 else f"NUMA nodes {sorted(map(str, nodes))}"
    )
    return [f"cpus {cpus} on {where}"]


def main() -> int:
    """Print the job's view of its devices; exit 1 when metadata is missing or broken."""
    try:
        for line in (
            gpu_report() + vfio_report() + network_report() + inference_report() + cpu_report()
        ):
            print(line)
    except dm.MetadataNotFoundError as err:
        print(f"no device metadata: {err}", file=sys.stderr)
        return 1
    except dm.DecodeError as err:
        print(f"broken device metadata: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
