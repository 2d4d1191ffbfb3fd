"""Framework profiles: the variables a framework reads, built only from the metadata.

``dra-metadata env --profile NAME`` and ``dm.env_vars(profile=NAME)`` print
these instead of the ``DRA_...`` variables. A profile that cannot be built from
the metadata is an :class:`~dra_metadata.EnvError` that says what is missing,
and nothing of it is printed.

Every value that goes into a list or an argument is checked against what
the variable can hold first: a UUID or a name with a separator, a space or
a control character in it, or a PCI address that is no PCI address, is an
:class:`~dra_metadata.EnvError` naming the device and the attribute (``env``
exits 65), and nothing is printed. A device listed twice is named once.

=========  =====================================================================
``cuda``   ``CUDA_VISIBLE_DEVICES``: the GPUs' ``uuid`` attribute (what
           NVIDIA/k8s-dra-driver-gpu publishes for GPUs, MIG and VFIO devices,
           ``cmd/gpu-kubelet-plugin/deviceinfo.go``), comma-joined, ordered by
           PCI address when every GPU has one (:attr:`Device.pci_bus_id
           <dra_metadata.Device.pci_bus_id>`), then with ``CUDA_DEVICE_ORDER=PCI_BUS_ID``
           (CUDA C Programming Guide, "CUDA Environment Variables"). Every GPU
           must be from ``gpu.nvidia.com``.
``rocm``   ``ROCR_VISIBLE_DEVICES``: the GPUs' ``uuid`` attribute (ROCm accepts
           UUIDs there: ROCm docs, "GPU isolation techniques"), ordered the same
           way. Every GPU must be from ``gpu.amd.com``. ROCm/k8s-gpu-dra-driver
           does not publish a UUID today (``docs/driver-attributes.md``), so
           this profile fails with that said until it does.
``nccl``   ``NCCL_SOCKET_IFNAME=<=net1,net2>`` (``=``: exact names, not
           prefixes; NCCL docs, "Environment Variables") from the NICs' network
           data, and ``NCCL_IB_HCA`` (also exact) when every such NIC has a
           ``dra.net/rdmaDevice`` (kubernetes-sigs/dranet
           ``pkg/apis/attributes.go``).
``dpdk``   ``DPDK_PCI_ALLOWLIST`` (comma-joined) and ``DPDK_EAL_ALLOW`` (``-a
           ADDR`` for each, for an EAL command line; DPDK "EAL parameters") from
           the NICs' PCI addresses (:attr:`Device.pci_bus_id
           <dra_metadata.Device.pci_bus_id>`, in the standard form).
``numa``   ``NUMA_NODES``: every NUMA node of the devices, once, in the order
           first seen (each device's physical node first), and
           ``NUMACTL_OPTIONS=--cpunodebind=N --membind=N`` for ``numactl``,
           bound to the devices' physical nodes only (KEP-6072: a list's first
           element; the rest are only the nearest other nodes). A negative
           node ("no NUMA affinity") is no node.
=========  =====================================================================

>>> import dra_metadata as dm
>>> env = profile_variables(dm.inventory("examples/topology-tree"), ["cuda", "nccl"])
>>> env["CUDA_DEVICE_ORDER"], env["NCCL_SOCKET_IFNAME"], env["NCCL_IB_HCA"]
('PCI_BUS_ID', '=net1,net2', '=mlx5_0,mlx5_1')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from ._errors import EnvError, MalformedAttributeError

if TYPE_CHECKING:
    from ._inventory import Inventory
    from ._topology import Topology, TopologyDevice

__all__ = ["PROFILES", "profile_variables"]

_UUID: Final = "uuid"
_RDMA: Final = "dra.net/rdmaDevice"
#: What one element of a device list may hold: a GPU or MIG UUID (``GPU-...``,
#: ``MIG-GPU-.../1/0``), an RDMA device (``mlx5_0``).
_ELEMENT: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]*", re.ASCII)
#: A Linux interface name: 1-15 characters, no ``/``, ``:``, space or separator.
_IFNAME: Final = re.compile(r"[A-Za-z0-9_.@+-]{1,15}", re.ASCII)


def _who(device: TopologyDevice) -> str:
    return f"{device.label} ({device.driver} {device.name!r} of {device.claim}/{device.request})"


def _checked(
    profile: str,
    variable: str,
    device: TopologyDevice,
    what: str,
    value: object,
    pattern: re.Pattern[str],
) -> str:
    """``value`` when ``pattern`` takes it whole, else an EnvError naming device and attribute."""
    if isinstance(value, str) and pattern.fullmatch(value) and value not in (".", ".."):
        return value
    raise EnvError(
        f"profile {profile}: {_who(device)}: {what} holds {value!r}, which {variable} cannot "
        "hold as one element (a separator, space or control character in it)"
    )


def _once(devices: list[TopologyDevice]) -> list[TopologyDevice]:
    """``devices`` with each device (driver, pool, name) once: the first."""
    seen: set[str] = set()
    found = []
    for device in devices:
        if device.id not in seen:
            seen.add(device.id)
            found.append(device)
    return found


def _ordered(devices: list[TopologyDevice]) -> tuple[list[TopologyDevice], bool]:
    from ._topology import pci_sort_key

    if devices and all(device.pci_bus_id for device in devices):
        return sorted(devices, key=lambda d: pci_sort_key(d.pci_bus_id or "")), True
    return devices, False


def _gpu_uuids(topo: Topology, profile: str, vendor: str, variable: str) -> dict[str, str]:
    gpus = _once(topo.gpus)
    if not gpus:
        raise EnvError(f"profile {profile}: no GPU is mounted (no device of kind gpu)")
    others = [gpu for gpu in gpus if gpu.driver != vendor]
    if others:
        raise EnvError(
            f"profile {profile}: {_who(others[0])} is not from {vendor}; {variable} "
            f"names {vendor} GPUs only (select them with --driver {vendor})"
        )
    missing = [gpu for gpu in gpus if not isinstance(gpu.attribute(_UUID), str)]
    if missing:
        raise EnvError(
            f"profile {profile}: {_who(missing[0])} has no {_UUID!r} attribute, so "
            f"{variable} cannot name it"
        )
    ordered, by_bus = _ordered(gpus)
    uuids = [
        _checked(profile, variable, gpu, f"attribute {_UUID!r}", gpu.attribute(_UUID), _ELEMENT)
        for gpu in ordered
    ]
    found = {variable: ",".join(dict.fromkeys(uuids))}
    if by_bus and profile == "cuda":
        found["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return found


def _cuda(topo: Topology) -> dict[str, str]:
    return _gpu_uuids(topo, "cuda", "gpu.nvidia.com", "CUDA_VISIBLE_DEVICES")


def _rocm(topo: Topology) -> dict[str, str]:
    return _gpu_uuids(topo, "rocm", "gpu.amd.com", "ROCR_VISIBLE_DEVICES")


def _nccl(topo: Topology) -> dict[str, str]:
    nics = [
        nic
        for nic in _once(topo.nics)
        if nic.network_data is not None and nic.network_data.interface_name
    ]
    if not nics:
        raise EnvError(
            "profile nccl: no NIC has an interface name in its network data "
            "(wait for it: dra-metadata wait --for network)"
        )
    names = [
        _checked(
            "nccl",
            "NCCL_SOCKET_IFNAME",
            nic,
            "network data interfaceName",
            nic.network_data.interface_name if nic.network_data else None,
            _IFNAME,
        )
        for nic in nics
    ]
    found = {"NCCL_SOCKET_IFNAME": "=" + ",".join(names)}
    hcas = [nic.attribute(_RDMA) for nic in nics]
    if all(isinstance(hca, str) and hca for hca in hcas):
        checked = [
            _checked("nccl", "NCCL_IB_HCA", nic, f"attribute {_RDMA!r}", hca, _ELEMENT)
            for nic, hca in zip(nics, hcas, strict=True)
        ]
        found["NCCL_IB_HCA"] = "=" + ",".join(checked)
    return found


def _dpdk(topo: Topology) -> dict[str, str]:
    from ._model import pci_address_of, standard_problem, tried_names

    nics = _once(topo.nics)
    if not nics:
        raise EnvError("profile dpdk: no NIC is mounted (no device of kind nic)")
    for nic in nics:
        found = pci_address_of(nic.mounted.device)
        if found is None:
            raise EnvError(
                f"profile dpdk: {_who(nic)} has no PCI address (none of "
                f"{', '.join(tried_names(nic.mounted.device, 'pciBusID'))})"
            )
        problem = standard_problem(nic.mounted.device, "pciBusID")
        if problem is not None:
            raise MalformedAttributeError(f"profile dpdk: {problem}")
    ordered, _ = _ordered(nics)
    addresses = [str(nic.pci_bus_id) for nic in ordered]
    return {
        "DPDK_PCI_ALLOWLIST": ",".join(addresses),
        "DPDK_EAL_ALLOW": " ".join(f"-a {address}" for address in addresses),
    }


def _numa(topo: Topology) -> dict[str, str]:
    placed = [device for device in _once(list(topo.devices)) if device.numa_nodes]
    if not placed:
        raise EnvError(
            "profile numa: no device has a NUMA node (resource.kubernetes.io/numaNode "
            "or a driver's own name for it; -1 is no node)"
        )
    nodes = dict.fromkeys(node for device in placed for node in device.numa_nodes)
    physical = dict.fromkeys(device.numa_nodes[0] for device in placed)
    bind = ",".join(map(str, physical))
    return {
        "NUMA_NODES": ",".join(map(str, nodes)),
        "NUMACTL_OPTIONS": f"--cpunodebind={bind} --membind={bind}",
    }


#: Profile name -> the function building its variables from a topology.
PROFILES: Final[dict[str, Callable[[Topology], dict[str, str]]]] = {
    "cuda": _cuda,
    "rocm": _rocm,
    "nccl": _nccl,
    "dpdk": _dpdk,
    "numa": _numa,
}


def profile_variables(inv: Inventory, profiles: Iterable[str]) -> dict[str, str]:
    """The variables of every named profile, in order; raises :class:`EnvError`.

    A request whose file does not decode is an error too (its devices would be
    missing from the profile). Values holding a NUL are refused as in ``env``.
    """
    names = list(dict.fromkeys(profiles))
    unknown = [name for name in names if name not in PROFILES]
    if unknown:
        raise EnvError(f"unknown profile {unknown[0]!r}; the profiles are {', '.join(PROFILES)}")
    if inv.problems:
        problem = inv.problems[0]
        raise EnvError(f"profile {names[0]}: {problem.message} (its devices would be missing)")
    topo = inv.topology()
    found: dict[str, str] = {}
    for name in names:
        for variable, value in PROFILES[name](topo).items():
            if "\x00" in value:
                raise EnvError(f"profile {name}: {variable} would hold a NUL character")
            found[variable] = value
    return found
