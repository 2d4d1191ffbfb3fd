"""Put each GPU next to its NIC and CPUs, from the pod's device metadata.

A training job with GPUs, RDMA NICs and CPUs from three drivers asks the
topology which NIC shares each GPU's PCIe root and which CPUs are local to it
(a CPU group lists every PCIe root of its NUMA node), then prints the framework
variables the metadata gives::

    DRA_METADATA_ROOT=examples/topology-tree python examples/topology.py

In a real pod, leave ``DRA_METADATA_ROOT`` unset.
"""

from __future__ import annotations

import sys

import dra_metadata as dm


def main() -> int:
    """Print one line per GPU, then CUDA and NCCL variables; exit 1 without metadata."""
    inv = dm.inventory()
    if not inv.exists:
        print(f"no device metadata under {inv.root}", file=sys.stderr)
        return 1
    topo = inv.topology()
    for gpu in topo.gpus:
        nic = topo.nearest(gpu, kind="nic")
        cpus = [cpu for cpu in topo.cpus if topo.affinity(gpu, cpu) in ("pcie-root", "numa")]
        nic_text = "none"
        if nic is not None and nic.network_data is not None:
            nic_text = f"{nic.network_data.interface_name} ({topo.affinity(gpu, nic)})"
        ids = [cpu.attribute("cpuID") for cpu in cpus]
        level = topo.affinity(gpu, cpus[0]) if cpus else ""
        cpu_text = f"{ids[0]}-{ids[-1]} ({level})" if ids else "none"
        print(f"{gpu.name} on {', '.join(gpu.pcie_roots)}: nic {nic_text}, cpus {cpu_text}")
    for problem in topo.problems:
        print(f"warning: {problem}", file=sys.stderr)
    try:
        env = dm.env_vars(profile=["cuda", "nccl"])
    except dm.EnvError as err:
        print(f"no framework variables: {err}", file=sys.stderr)
        return 1
    for name, value in env.items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
