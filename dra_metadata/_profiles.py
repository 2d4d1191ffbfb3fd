"""Framework profiles: the variables a framework reads, built only from the metadata.

``dra-metadata env --profile NAME`` and ``dm.env_vars(profile=NAME)`` print
these instead of the ``DRA_...`` variables. Several profiles are a
comma-separated list (``cuda,nccl``), several options or a list of names; an
unknown name is an :class:`~dra_metadata.EnvError` naming the closest profile.

A profile that cannot be built from the metadata is an
:class:`~dra_metadata.EnvError` of one line: what is missing (the attribute, the
driver or the kind of device), then what to do instead; nothing of it is
printed. A suggested selection (``add --driver gpu.nvidia.com``) is made only
after the profiles were built on it, so it never names a command that fails.

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
           must be from ``gpu.nvidia.com`` (HIP reads ``CUDA_VISIBLE_DEVICES``
           too: ROCm docs, "GPU isolation techniques").
``rocm``   ``ROCR_VISIBLE_DEVICES``: the GPUs' ``uuid`` attribute, ordered the
           same way; every GPU must be from ``gpu.amd.com``. ROCm takes UUIDs or
           indices there and nothing else (ROCm docs, "GPU isolation
           techniques"); the metadata gives no index that means anything in the
           container. ROCm/k8s-gpu-dra-driver publishes no ``uuid``
           (``docs/driver-attributes.md``), so on its GPUs this profile says
           so, and that no variable is needed: its CDI spec gives the container
           only the allocated GPUs' ``/dev/dri`` nodes
           (``cmd/gpu-kubeletplugin/state.go``), and a container cannot use a
           GPU whose render node it lacks (ROCm docs, "Running ROCm Docker
           containers").
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
>>> env = profile_variables(dm.inventory("examples/topology-tree"), "cuda,nccl")
>>> env["CUDA_DEVICE_ORDER"], env["NCCL_SOCKET_IFNAME"], env["NCCL_IB_HCA"]
('PCI_BUS_ID', '=net1,net2', '=mlx5_0,mlx5_1')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from ._errors import EnvError, MalformedAttributeError
from ._standard import pci_address_of, standard_problem

if TYPE_CHECKING:
    from ._inventory import Inventory
    from ._topology import Topology, TopologyDevice

__all__ = ["PROFILES", "profile_names", "profile_variables"]

_UUID: Final = "uuid"
_RDMA: Final = "dra.net/rdmaDevice"
#: What one element of a device list may hold: a GPU or MIG UUID (``GPU-...``,
#: ``MIG-GPU-.../1/0``), an RDMA device (``mlx5_0``).
_ELEMENT: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]*", re.ASCII)
#: A Linux interface name: 1-15 characters, no ``/``, ``:``, space or separator.
_IFNAME: Final = re.compile(r"[A-Za-z0-9_.@+-]{1,15}", re.ASCII)


class _Unbuilt(Exception):
    """A profile that cannot be built: what is missing, what to do, and selections to try.

    ``narrow`` names drivers whose devices alone might build it; one is suggested
    (``add --driver D``) only when every asked profile builds on it.
    """

    def __init__(self, missing: str, fix: str, narrow: Iterable[str] = ()) -> None:
        super().__init__(f"{missing}; {fix}")
        self.missing = missing
        self.fix = fix
        self.narrow = tuple(dict.fromkeys(narrow))


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
    # the topology loads only when a profile places devices
    from ._topology import pci_sort_key

    if devices and all(device.pci_bus_id for device in devices):
        return sorted(devices, key=lambda d: pci_sort_key(d.pci_bus_id or "")), True
    return devices, False


def _none_of_kind(profile: str, kind: str, variable: str) -> _Unbuilt:
    return _Unbuilt(
        f"no {kind.upper()} is mounted (no device of kind {kind}), so {variable} has "
        "nothing to name",
        f"leave --profile {profile} out",
    )


def _gpu_uuids(topo: Topology, profile: str, vendor: str, variable: str) -> dict[str, str]:
    gpus = _once(topo.gpus)
    if not gpus:
        raise _none_of_kind(profile, "gpu", variable)
    ours = [gpu for gpu in gpus if gpu.driver == vendor]
    missing = [gpu for gpu in ours if not isinstance(gpu.attribute(_UUID), str)]
    if missing:
        raise _Unbuilt(
            f"{_who(missing[0])} has no {_UUID!r} attribute ({vendor} publishes none for it), "
            f"and {variable} takes only UUIDs or indices, which the metadata does not give",
            f"no variable is needed: the driver's CDI spec gives this container only its "
            f"allocated GPUs, so leave {variable} unset",
        )
    ordered, by_bus = _ordered(ours)
    uuids = [
        _checked(profile, variable, gpu, f"attribute {_UUID!r}", gpu.attribute(_UUID), _ELEMENT)
        for gpu in ordered
    ]
    others = [gpu for gpu in gpus if gpu.driver != vendor]
    if others and ours:
        raise _Unbuilt(
            f"{_who(others[0])} is not from {vendor}, and {variable} names {vendor} GPUs only",
            f"select the {vendor} GPUs alone",
            narrow=[vendor],
        )
    if others:
        raise _Unbuilt(
            f"no GPU here is from {vendor} ({others[0].label} is {others[0].driver} "
            f"{others[0].name!r} of {others[0].claim}/{others[0].request}), and {variable} "
            "names only those",
            f"leave --profile {profile} out",
        )
    found = {variable: ",".join(dict.fromkeys(uuids))}
    if by_bus and profile == "cuda":
        found["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return found


def _cuda(topo: Topology) -> dict[str, str]:
    return _gpu_uuids(topo, "cuda", "gpu.nvidia.com", "CUDA_VISIBLE_DEVICES")


def _rocm(topo: Topology) -> dict[str, str]:
    return _gpu_uuids(topo, "rocm", "gpu.amd.com", "ROCR_VISIBLE_DEVICES")


def _wait_for_network(nic: TopologyDevice) -> str:
    """The ``wait`` command that waits for ``nic``'s request to have network data."""
    option = "--claim" if nic.mounted.kind == "claim" else "--template-claim"
    return (
        f"dra-metadata wait {option} {nic.claim} --request {nic.mounted.base_request} --for network"
    )


def _nccl(topo: Topology) -> dict[str, str]:
    every = _once(topo.nics)
    if not every:
        raise _none_of_kind("nccl", "nic", "NCCL_SOCKET_IFNAME")
    nics = [
        nic for nic in every if nic.network_data is not None and nic.network_data.interface_name
    ]
    if not nics:
        raise _Unbuilt(
            f"no NIC has an interface name in its network data yet ({_who(every[0])} has none)",
            f"the driver writes it after the pod starts: {_wait_for_network(every[0])} "
            "waits for it",
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
    # what is nearby: only on the way to a not-found message
    from ._nearby import tried_names

    nics = _once(topo.nics)
    if not nics:
        raise _none_of_kind("dpdk", "nic", "DPDK_PCI_ALLOWLIST")
    without = [nic for nic in nics if pci_address_of(nic.mounted.device) is None]
    if without:
        lacking = {nic.driver for nic in without}
        nic = without[0]
        raise _Unbuilt(
            f"{_who(nic)} has no PCI address (none of "
            f"{', '.join(tried_names(nic.mounted.device, 'pciBusID'))})",
            "DPDK takes PCI devices only: select the NICs that have one",
            narrow=[other.driver for other in nics if other.driver not in lacking],
        )
    for nic in nics:
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
        raise _Unbuilt(
            "no device has a NUMA node (resource.kubernetes.io/numaNode or a driver's own "
            "name for it; -1 is no node)",
            "numactl has nothing to bind to: leave --profile numa out",
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


def profile_names(profiles: str | Iterable[str]) -> list[str]:
    """The profiles ``profiles`` names, each once, in order; raises :class:`EnvError`.

    A string is a comma-separated list (``"cuda,nccl"``); several strings are
    several such lists. A name that is no profile (or an empty one) is an
    error naming the profiles and the closest one.

    >>> profile_names("cuda,nccl"), profile_names(["numa", "cuda, numa"])
    (['cuda', 'nccl'], ['numa', 'cuda'])
    >>> try:
    ...     profile_names("cuda,nccl,cdua")
    ... except EnvError as err:
    ...     print(str(err).partition("; ")[0], str(err).rpartition("; ")[2])
    unknown profile 'cdua' did you mean 'cuda'?
    """
    texts = [profiles] if isinstance(profiles, str) else list(profiles)
    names: list[str] = []
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"a profile is a name (a str), not {type(text).__name__}")
        for part in text.split(","):
            name = part.strip()
            if name not in PROFILES:
                from ._text import did_you_mean  # only on the way to an error

                what = f"unknown profile {name!r}" if name else f"an empty profile name in {text!r}"
                hint = did_you_mean(name, PROFILES) if name else ""
                raise EnvError(f"{what}; the profiles are {', '.join(PROFILES)}{hint}")
            names.append(name)
    if not names:
        raise EnvError(f"no profile named; the profiles are {', '.join(PROFILES)}")
    return list(dict.fromkeys(names))


def _build(topo: Topology, names: list[str], *, explain: bool) -> dict[str, str]:
    """The variables of the profiles ``names`` on ``topo``; the first that fails raises."""
    found: dict[str, str] = {}
    for name in names:
        try:
            built = PROFILES[name](topo)
        except _Unbuilt as unbuilt:
            text = _explained(topo, names, name, unbuilt) if explain else str(unbuilt)
            raise EnvError(f"profile {name}: {text}") from None
        for variable, value in built.items():
            if "\x00" in value:
                raise EnvError(f"profile {name}: {variable} would hold a NUL character")
            found[variable] = value
    return found


def _builds(topo: Topology, names: list[str]) -> bool:
    try:
        _build(topo, names, explain=False)
    except (EnvError, MalformedAttributeError):
        return False
    return True


def _explained(topo: Topology, names: list[str], name: str, unbuilt: _Unbuilt) -> str:
    """What is missing and what to do: a narrower selection the profiles were built on, first.

    ``add --driver D`` when every profile asked builds on ``D``'s devices alone;
    ``run --profile P alone with --driver D`` when ``P`` does; else the plain
    fix, naming the other profiles asked that cannot be built here either.
    """
    # the topology loads only when a profile places devices
    from ._topology import Topology

    drivers = {device.driver for device in topo.devices}
    fix = unbuilt.fix
    for driver in unbuilt.narrow:
        if drivers == {driver}:
            continue  # already that driver's devices alone
        narrowed = Topology(devices=tuple(d for d in topo.devices if d.driver == driver))
        if _builds(narrowed, names):
            return f"{unbuilt.missing}; add --driver {driver} to read only its devices"
        if len(names) > 1 and _builds(narrowed, [name]):
            fix = f"run --profile {name} alone with --driver {driver}"
            break
    failing = [other for other in names if other != name and not _builds(topo, [other])]
    if failing:
        fix += f"; {', '.join(failing)} cannot be built here either"
    return f"{unbuilt.missing}; {fix}"


def profile_variables(inv: Inventory, profiles: str | Iterable[str]) -> dict[str, str]:
    """The variables of every named profile, in order; raises :class:`EnvError`.

    ``profiles`` as :func:`profile_names` reads it. A request whose file does
    not decode is an error too (its devices would be missing from the profile).
    Values holding a NUL are refused as in ``env``.
    """
    names = profile_names(profiles)
    if inv.problems:
        problem = inv.problems[0]
        raise EnvError(f"profile {names[0]}: {problem.message} (its devices would be missing)")
    return _build(inv.topology(), names, explain=True)
