"""Does the container have what its metadata says? The live check behind ``doctor``.

:func:`check_live` compares every mounted device with the system this process
sees and returns a :class:`LiveReport` of :class:`LiveFinding` records, each
saying what was checked, what was expected, what was found, and which file
said so:

``pci-device``
    the device's PCI address (:attr:`Device.pci_bus_id
    <dra_metadata.Device.pci_bus_id>`: the standard ``pciBusID`` or a driver's
    own name for it) exists under ``<sys>/bus/pci/devices``. Only a valid PCI
    address names a path: an attribute that holds anything else is a finding,
    and nothing is read for it;
``numa-node``
    its sysfs ``numa_node`` is the device's physical NUMA node
    (:attr:`Device.numa_node <dra_metadata.Device.numa_node>`: the scalar, or a
    list's first element, KEP-6072; sysfs ``-1`` is no node);
``pcie-root``
    the PCIe root in its sysfs path (``<sys>/devices/pci0000:3a/...``) is one
    of the ``pcieRoot`` attribute's roots;
``interface``, ``hardware-address``, ``ip``
    the network data's interface exists in this network namespace, with that
    hardware address and each of those IPs (read with ``ip -json address``
    from iproute2: netlink through a maintained tool, not by hand);
``cpuset``
    each CPU a ``dra.cpu`` device stands for (``cpuID``) is in this process's
    effective cpuset: cgroup v2 ``cpuset.cpus.effective``, v1
    ``cpuset.effective_cpus``, found through ``<proc>/self/cgroup``;
``file``
    every metadata file decodes and is current: a mounted file whose node copy
    was replaced has ``st_nlink == 0`` and will never change again (stale);
``device``
    no device is listed twice in one request.

The sysfs, procfs and cgroup roots are parameters, so tests and odd systems
can point elsewhere. Every file is opened without blocking and read only when
it is a regular file (a FIFO or a device under those roots is a finding, not a
hang), ``ip`` gets a timeout, and a CPU list is kept as ranges, so
``0-4000000000`` costs what ``0-4`` does.

>>> import dra_metadata as dm
>>> report = dm.check_live("examples/topology-tree", sys_root="/nonexistent",
...                        proc_root="/nonexistent")
>>> report.ok, sorted({f.check for f in report.problems})
(False, ['cpuset', 'interface', 'pci-device'])
"""

from __future__ import annotations

import bisect
import contextlib
import ipaddress
import os
import stat
import time
from collections.abc import Iterable, Mapping
from typing import Final, Literal

import msgspec

# At run time too: the public signatures name them (typing.get_type_hints(), help()).
from ._inventory import Inventory
from ._inventory import inventory as read_inventory
from ._paths import RootArg
from ._standard import pci_address_of
from ._topology import TopologyDevice, cpu_ids
from ._variables import claim_variables

__all__ = [
    "Check",
    "CpuSet",
    "IpQuery",
    "LiveFinding",
    "LiveReport",
    "check_live",
    "parse_cpu_list",
]

#: What a :class:`LiveFinding` checked: a PCI device in sysfs, its NUMA node or PCIe
#: root, a network interface, its hardware address or IPs, the cpuset, a file.
Check = Literal[
    "pci-device",
    "numa-node",
    "pcie-root",
    "interface",
    "hardware-address",
    "ip",
    "cpuset",
    "file",
    "device",
]

SYS_ROOT: Final = "/sys"
#: The CPU driver's variable, set through CDI: ``DRA_CPUSET_<claimUID>=<cpu list>``
#: (kubernetes-sigs/dra-driver-cpu, pkg/driver/cdi.go).
_CPUSET_PREFIX: Final = "DRA_CPUSET_"
PROC_ROOT: Final = "/proc"
#: Seconds ``ip`` has to list the interfaces.
IP_TIMEOUT: Final = 5.0
_IP_OUTPUT_LIMIT: Final = 64 << 20
CGROUP_ROOT: Final = "/sys/fs/cgroup"


class LiveFinding(msgspec.Struct, frozen=True, gc=False):
    """One comparison of the metadata with the live system.

    ``subject`` names the device (or file), ``path`` the metadata file that
    said what was ``expected``; ``hint`` says what to do when it is not ``ok``.

    >>> f = LiveFinding("ip", False, "nic0", "10.0.0.5/24", "10.0.0.9/24", "/x.json")
    >>> print(f)
    /x.json: nic0: ip: expected 10.0.0.5/24, found 10.0.0.9/24
    """

    #: What was compared.
    check: Check
    #: Whether the system matches the metadata.
    ok: bool
    #: The device (or file) the finding is about.
    subject: str
    #: What the metadata says.
    expected: str
    #: What the system has.
    found: str
    #: The metadata file that said it.
    path: str
    #: What to do when the finding is not ok (empty when ok).
    hint: str = ""

    def __str__(self) -> str:
        text = f"{self.path}: {self.subject}: {self.check}: "
        text += f"expected {self.expected}, found {self.found}"
        return f"{text} ({self.hint})" if self.hint and not self.ok else text

    def to_dict(self) -> dict[str, object]:
        """The JSON form ``doctor --json`` prints."""
        return {
            "check": self.check,
            "ok": self.ok,
            "subject": self.subject,
            "expected": self.expected,
            "found": self.found,
            "path": self.path,
            "hint": self.hint or None,
        }


class LiveReport(msgspec.Struct, frozen=True, gc=False):
    """Every finding of one :func:`check_live` run, in device order.

    >>> report = LiveReport("/root", (LiveFinding("file", True, "f", "a", "a", "/f.json"),))
    >>> report.ok, report.problems, report.to_dict()["checked"]
    (True, [], 1)
    """

    #: The metadata root that was checked.
    root: str
    #: Every finding, in device order.
    findings: tuple[LiveFinding, ...] = ()

    @property
    def problems(self) -> list[LiveFinding]:
        """The findings where the system does not match the metadata."""
        return [finding for finding in self.findings if not finding.ok]

    @property
    def ok(self) -> bool:
        """Nothing differs (also true when nothing was there to check)."""
        return all(finding.ok for finding in self.findings)

    def to_dict(self) -> dict[str, object]:
        """The JSON form ``doctor --json`` prints."""
        return {
            "root": self.root,
            "ok": self.ok,
            "checked": len(self.findings),
            "problems": len(self.problems),
            "findings": [finding.to_dict() for finding in self.findings],
        }


class CpuSet:
    """A kernel CPU list as sorted, disjoint ranges: any size costs what its text does.

    >>> cpus = parse_cpu_list("0-4000000000,7")
    >>> 3999999999 in cpus, 4000000001 in cpus, str(cpus), cpus.covers(CpuSet([(5, 9)]))
    (True, False, '0-4000000000', True)
    """

    __slots__ = ("ranges",)

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        merged: list[tuple[int, int]] = []
        for low, high in sorted(ranges):
            if merged and low <= merged[-1][1] + 1:
                if high > merged[-1][1]:
                    merged[-1] = (merged[-1][0], high)
            else:
                merged.append((low, high))
        #: ``(first, last)`` of each range, sorted and apart.
        self.ranges: tuple[tuple[int, int], ...] = tuple(merged)

    def __contains__(self, cpu: object) -> bool:
        return isinstance(cpu, int) and self.covers(CpuSet([(cpu, cpu)]))

    def covers(self, other: CpuSet) -> bool:
        """Whether every CPU of ``other`` is in this set."""

        for low, high in other.ranges:
            index = bisect.bisect_right(self.ranges, (low, 1 << 64)) - 1
            if index < 0 or not (self.ranges[index][0] <= low and high <= self.ranges[index][1]):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in self.ranges)

    def __repr__(self) -> str:
        return f"CpuSet({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CpuSet) and self.ranges == other.ranges

    def __hash__(self) -> int:
        return hash(self.ranges)


def parse_cpu_list(text: str) -> CpuSet:
    """A kernel CPU list (``0-3,8,10-11``) as a :class:`CpuSet`; ``ValueError`` if it is not one.

    >>> str(parse_cpu_list("0-2,8\\n"))
    '0-2,8'
    """
    ranges: list[tuple[int, int]] = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, sep, high = part.partition("-")
        if len(part) > 40 or not low.isdigit() or (sep and not high.isdigit()):
            raise ValueError(f"not a CPU list: {part[:40]!r}")
        first, last = int(low), int(high) if sep else int(low)
        if last < first:
            raise ValueError(f"not a CPU list: {part!r}")
        ranges.append((first, last))
    return CpuSet(ranges)


#: The most of one sysfs, procfs or cgroup file read.
_READ_LIMIT: Final = 1 << 20


def _read(path: str) -> str | None:
    """A regular file's text (at most 1 MiB), opened without blocking; else ``None``."""

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _READ_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


class _Interface(msgspec.Struct, gc=False):
    local: str = ""
    prefixlen: int = -1


class _Link(msgspec.Struct, gc=False):
    ifname: str = ""
    address: str = ""
    addr_info: list[_Interface] = []


class IpQuery:
    """``ip -json address show`` started now, its answer read when :func:`check_live` needs it.

    Starting it before the metadata is read lets it run while the files are
    decoded (``doctor`` does); :func:`check_live` takes one as ``ip``. It has
    ``timeout`` seconds from its start to answer: then it (and whatever it
    started) is killed, and the answer says so.
    """

    def __init__(self, ip: str = "ip", *, timeout: float = IP_TIMEOUT) -> None:

        self.ip = ip
        self.timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._answer: list[_Link] | str | None = None
        self._pid = -1
        self._read_end, write_end = os.pipe()
        try:
            self._pid = os.posix_spawnp(
                ip,
                [ip, "-json", "address", "show"],
                {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"},
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, write_end, 1),
                    (os.POSIX_SPAWN_CLOSE, self._read_end),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
                setpgroup=0,
            )
        except OSError as err:
            self._answer = f"{ip} could not run ({os.strerror(err.errno or 0).lower()})"
        finally:
            os.close(write_end)

    def _result(self) -> list[_Link] | str:
        """The interfaces of this network namespace, or why they could not be listed."""
        if self._answer is None:
            self._answer = self._collect()
        if self._read_end >= 0:
            os.close(self._read_end)
            self._read_end = -1
        return self._answer

    def _collect(self) -> list[_Link] | str:
        # only the live check's link listing waits on a socket
        import select
        import signal

        chunks = []
        size = 0
        poller = select.poll()
        poller.register(self._read_end, select.POLLIN)
        while True:
            left = self._deadline - time.monotonic()
            if left <= 0 or size > _IP_OUTPUT_LIMIT or not poller.poll(left * 1000):
                with contextlib.suppress(OSError):
                    os.killpg(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
                if size > _IP_OUTPUT_LIMIT:
                    return f"{self.ip} -json address show printed more than 64 MiB"
                return f"{self.ip} -json address show did not answer within {self.timeout:g} s"
            chunk = os.read(self._read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        _, status = os.waitpid(self._pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            return f"{self.ip} -json address show failed (exit {code})"
        try:
            return msgspec.json.decode(b"".join(chunks), type=list[_Link])
        except msgspec.DecodeError as err:
            return f"{self.ip} -json address show printed no JSON list ({err})"


def _cpuset(proc_root: str, cgroup_root: str) -> tuple[CpuSet, str] | str:
    """This process's effective cpuset and the file it came from, or why there is none."""
    table = _read(os.path.join(proc_root, "self", "cgroup"))
    candidates: list[str] = []
    for line in (table or "").splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        relative = path.lstrip("/")
        if number == "0" and controllers == "":
            # The nearest cgroup with the cpuset controller: the own one, else an ancestor.
            parts = [part for part in relative.split("/") if part]
            for depth in range(len(parts), -1, -1):
                for base in (cgroup_root, os.path.join(cgroup_root, "unified")):
                    candidates.append(os.path.join(base, *parts[:depth], "cpuset.cpus.effective"))
        elif "cpuset" in controllers.split(","):
            candidates.append(
                os.path.join(cgroup_root, "cpuset", relative, "cpuset.effective_cpus")
            )
            candidates.append(os.path.join(cgroup_root, relative, "cpuset.effective_cpus"))
    for candidate in candidates:
        text = _read(candidate)
        if text is not None:
            try:
                return parse_cpu_list(text), candidate
            except ValueError:
                return f"{candidate} holds no CPU list: {text.strip()[:80]!r}"
    if table is None:
        return f"{os.path.join(proc_root, 'self', 'cgroup')} cannot be read"
    return f"no cpuset file of this process's cgroup under {cgroup_root}"


def check_live(
    root: RootArg = None,
    *,
    sys_root: str = SYS_ROOT,
    proc_root: str = PROC_ROOT,
    cgroup_root: str = CGROUP_ROOT,
    ip: str | IpQuery = "ip",
    inventory: Inventory | None = None,
    environ: Mapping[str, str] | None = None,
) -> LiveReport:
    """Compare the metadata under ``root`` with the system this process sees.

    ``inventory`` reuses one already read. A ``DRA_CPUSET_<claimUID>`` variable
    of ``environ`` (default ``os.environ``; the CPU driver sets it through CDI)
    whose claim is mounted is checked against the effective cpuset too. ``ip``
    is the iproute2 command that lists the interfaces (run only when a device
    has network data). Raises :class:`~dra_metadata.MetadataNotFoundError`
    when the root does not exist; never for what the system or the files
    hold: each difference is a :class:`LiveFinding` that is not ``ok``.

    >>> import dra_metadata as dm
    >>> report = dm.check_live("examples/topology-tree", sys_root="/nonexistent")
    >>> print(report.problems[0])  # doctest: +ELLIPSIS
    examples/.../gpu.nvidia.com-metadata.json: gpu0 gpu-0: pci-device: expected 0000:18:00.0, ...
    """

    inv = read_inventory(root) if inventory is None else inventory
    if not inv.exists:
        # what is nearby: only on the way to a not-found message
        from ._nearby import not_found

        raise not_found(inv.root, kind=None, claim=None, request=None)
    if not inv.files:
        # what is nearby: only on the way to a not-found message
        from ._nearby import nothing_mounted

        raise nothing_mounted(inv.root)
    files = {(f.kind, f.claim, f.request, f.driver): f.path for f in inv.files if f.driver}
    findings: list[LiveFinding] = []
    for problem in inv.problems:
        findings.append(
            LiveFinding(
                "file",
                False,
                "metadata file",
                "a readable metadata file",
                problem.status,
                problem.path,
                problem.message,
            )
        )
    for file in inv.files:
        if file.metadata is None:
            continue
        try:
            links = os.stat(file.path).st_nlink
        except OSError as err:
            reason = os.strerror(err.errno or 0).lower()
            findings.append(
                LiveFinding("file", False, "metadata file", "a current file", reason, file.path)
            )
            continue
        findings.append(
            LiveFinding(
                "file",
                links != 0,
                "metadata file",
                "a current file",
                "current" if links else "stale: replaced on the node (st_nlink 0)",
                file.path,
                "" if links else "restart the container to see the node's new metadata",
            )
        )
    topo = inv.topology()
    for twice in topo.problems:
        if twice.kind == "duplicate":
            findings.append(
                LiveFinding(
                    "device",
                    False,
                    twice.device,
                    "each device once",
                    "listed twice",
                    f"{twice.claim}/{twice.request}",
                    twice.message,
                )
            )
    devices_dir = os.path.realpath(os.path.join(sys_root, "devices"))
    query = ip if isinstance(ip, IpQuery) else None
    command = ip.ip if isinstance(ip, IpQuery) else ip
    cpuset_cache: list[tuple[CpuSet, str] | str] = []

    for device in topo.devices:
        mounted = device.mounted
        path = files.get((mounted.kind, mounted.claim, mounted.base_request, mounted.driver), "")
        subject = f"{device.label} {device.name}"
        findings.extend(_pci(device, subject, path, sys_root, devices_dir))
        network = device.network_data
        if network is not None and network.interface_name:
            if query is None:
                query = IpQuery(command)
            findings.extend(_network(device, subject, path, query._result(), command))
        cpus = cpu_ids(device)
        if cpus:
            if not cpuset_cache:
                cpuset_cache.append(_cpuset(proc_root, cgroup_root))
            findings.extend(_cpus([(cpu, cpu) for cpu in cpus], subject, path, cpuset_cache[0]))
    source = os.environ if environ is None else environ
    cpusets = {k: source[k] for k in source if k.upper().startswith(_CPUSET_PREFIX)}
    for variable in claim_variables(inv.requests, cpusets) if cpusets else ():
        try:
            wanted = parse_cpu_list(variable.value)
        except ValueError:
            findings.append(
                LiveFinding(
                    "cpuset",
                    False,
                    f"${variable.name}",
                    "a CPU list",
                    repr(variable.value[:80]),
                    f"claim {variable.claim!r}",
                    "the CPU driver set a value that is no CPU list",
                )
            )
            continue
        if not cpuset_cache:
            cpuset_cache.append(_cpuset(proc_root, cgroup_root))
        findings.extend(
            _cpus(
                list(wanted.ranges),
                f"${variable.name}",
                f"claim {variable.claim!r}",
                cpuset_cache[0],
            )
        )
    if query is not None:
        query._result()  # reap it, answered or not
    return LiveReport(inv.root, tuple(findings))


def _pci(
    device: TopologyDevice, subject: str, path: str, sys_root: str, devices_dir: str
) -> Iterable[LiveFinding]:

    found = pci_address_of(device.mounted.device)
    if found is None:
        return
    address = found.value
    if address is None:
        yield LiveFinding(
            "pci-device",
            False,
            subject,
            f"a PCI address in {found.source}",
            repr(found.raw)[:80],
            path,
            "the driver published no PCI address ([domain:]bus:device.function); "
            "nothing under sysfs was read for it",
        )
        return
    where = os.path.join(sys_root, "bus", "pci", "devices", address)
    if not os.path.exists(where):
        yield LiveFinding(
            "pci-device",
            False,
            subject,
            address,
            f"no {where}",
            path,
            "the device is not visible here: is sysfs mounted, and is this the node it "
            "was allocated on?",
        )
        return
    yield LiveFinding("pci-device", True, subject, address, where, path)
    if device.numa_node is not None:
        text = (_read(os.path.join(where, "numa_node")) or "").strip()[:40]
        found_text = (
            "no readable numa_node file"
            if not text
            else ("no NUMA node (-1)" if text == "-1" else f"node {text}")
        )
        nodes = device.numa_nodes
        listed = f" of {','.join(map(str, nodes))}" if len(nodes) > 1 else ""
        yield LiveFinding(
            "numa-node",
            text == str(device.numa_node),
            subject,
            f"physical node {device.numa_node}{listed} ({device.numa_source})",
            found_text,
            path,
            "the driver published another physical NUMA node than sysfs reports "
            "(KEP-6072: a list's first element is the device's own node)",
        )
    if device.pcie_roots:
        real = os.path.realpath(where)
        relative = os.path.relpath(real, devices_dir).split(os.sep)
        root = relative[0] if relative and relative[0].startswith("pci") else ""
        yield LiveFinding(
            "pcie-root",
            root in device.pcie_roots,
            subject,
            ", ".join(device.pcie_roots),
            root or f"no PCIe root in {real}",
            path,
            "the driver published another PCIe root than the sysfs path shows",
        )


def _same_ip(wanted: str, local: str, prefixlen: int) -> bool:
    if wanted in (f"{local}/{prefixlen}", local):  # the common case, without ipaddress
        return True

    try:
        want = ipaddress.ip_interface(wanted)
        have = ipaddress.ip_interface(f"{local}/{prefixlen}" if prefixlen >= 0 else local)
    except ValueError:
        return wanted == local
    if "/" not in wanted:
        return want.ip == have.ip
    return want == have


def _network(
    device: TopologyDevice, subject: str, path: str, links: list[_Link] | str, ip: str
) -> Iterable[LiveFinding]:
    network = device.network_data
    assert network is not None
    name = network.interface_name
    if isinstance(links, str):
        yield LiveFinding(
            "interface",
            False,
            subject,
            name,
            links,
            path,
            "install iproute2 (the ip command) or point ip= at it",
        )
        return
    link = next((link for link in links if link.ifname == name), None)
    if link is None:
        there = ", ".join(link.ifname for link in links) or "none"
        yield LiveFinding(
            "interface",
            False,
            subject,
            name,
            f"no such interface (there: {there})",
            path,
            "run this in the pod's network namespace; the driver may not have moved it yet",
        )
        return
    yield LiveFinding("interface", True, subject, name, name, path)
    if network.hardware_address:
        same = link.address.lower() == network.hardware_address.lower()
        yield LiveFinding(
            "hardware-address",
            same,
            subject,
            network.hardware_address,
            link.address or "none",
            path,
            f"{name} has another hardware address",
        )
    for wanted in network.ips:
        match = next((a for a in link.addr_info if _same_ip(wanted, a.local, a.prefixlen)), None)
        found = (
            f"{match.local}/{match.prefixlen}"
            if match is not None
            else ", ".join(f"{a.local}/{a.prefixlen}" for a in link.addr_info) or "no address"
        )
        yield LiveFinding(
            "ip",
            match is not None,
            subject,
            f"{wanted} on {name}",
            found,
            path,
            f"{name} lacks this address: the driver's network setup did not finish",
        )


def _cpus(
    wanted: list[tuple[int, int]], subject: str, path: str, cpuset: tuple[CpuSet, str] | str
) -> Iterable[LiveFinding]:
    """One finding for each CPU (``(n, n)``) or range of CPUs that should be in the cpuset."""
    first = wanted[0][0] if wanted else 0
    if isinstance(cpuset, str):
        yield LiveFinding(
            "cpuset",
            False,
            subject,
            f"cpu {first}",
            cpuset,
            path,
            "point cgroup_root/proc_root (--cgroup-root, --proc-root) at them",
        )
        return
    allowed, source = cpuset
    for low, high in wanted:
        what = f"cpu {low}" if low == high else f"cpus {low}-{high}"
        yield LiveFinding(
            "cpuset",
            allowed.covers(CpuSet([(low, high)])),
            subject,
            f"{what} in the cpuset",
            f"{source}: {allowed}",
            path,
            "the CPU driver's cpuset was not applied to this container",
        )
