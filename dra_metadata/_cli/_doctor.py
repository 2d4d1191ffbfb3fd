"""``dra-metadata doctor``: does this container have what its metadata says?"""

from __future__ import annotations

import argparse
from typing import Final

from . import (
    EXIT_FALSE,
    EXIT_OK,
    Commands,
    add_command,
    add_format,
    add_root,
    fail,
    selected_inventory,
    write_stdout,
    write_text,
)

__all__ = ["register"]

_DESCRIPTION: Final = """\
Compare every mounted device with the system this container sees:

  pci-device        its PCI address (pciBusID, or a driver's own name for it)
                    is one and exists under SYS/bus/pci/devices
  numa-node         sysfs numa_node is the device's physical NUMA node
  pcie-root         the PCIe root in its sysfs path is one of its pcieRoot
  interface         the network data's interface is in this network namespace,
  hardware-address  with that hardware address
  ip                and each of those IPs (read with `ip -json address`)
  cpuset            each dra.cpu CPU, and each CPU of the CPU driver's
                    $DRA_CPUSET_<claimUID>, is in this process's effective cpuset
                    (cgroup v2 cpuset.cpus.effective, v1 cpuset.effective_cpus)
  file              each metadata file decodes and is current (not replaced on
                    the node after the container started: stale)
  device            no device is listed twice in a request

Only a valid PCI address names a sysfs path; files are read only when they
are regular files (opened without blocking); ip has 5 seconds to answer; CPU
lists are kept as ranges. Whatever the node holds ends as a finding.

Prints one line per difference (PATH: DEVICE: CHECK: expected ..., found ...
(what to do)) and a summary; --verbose prints the checks that passed too.
Exits 0 when the container matches its metadata, 1 when something differs,
66 when nothing is mounted under the root (or it is missing), as every command.
"""


def register(commands: Commands) -> None:
    """Add ``doctor`` to ``commands``."""
    parser = add_command(
        commands,
        "doctor",
        summary="check the metadata against this container's devices, network and cpuset",
        description=_DESCRIPTION,
    )
    add_root(parser)
    parser.add_argument("--sys-root", default="/sys", metavar="DIR", help="sysfs (default /sys)")
    parser.add_argument(
        "--proc-root", default="/proc", metavar="DIR", help="procfs (default /proc)"
    )
    parser.add_argument(
        "--cgroup-root",
        default="/sys/fs/cgroup",
        metavar="DIR",
        help="the cgroup mount (default /sys/fs/cgroup)",
    )
    parser.add_argument(
        "--ip", default="ip", metavar="COMMAND", help="the iproute2 command (default ip)"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also print the checks that passed"
    )
    add_format(parser, ("text", "json"), help="text: one line per finding (default); json")
    parser.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    # loaded when the command runs: --help and completion build every parser without it
    from .._live import IpQuery, check_live

    query = IpQuery(args.ip)  # runs while the metadata is read
    try:
        inv = selected_inventory(args)  # a missing or empty root: every command's not-found
    except BaseException:
        query._result()
        raise
    report = check_live(
        inv.root,
        sys_root=args.sys_root,
        proc_root=args.proc_root,
        cgroup_root=args.cgroup_root,
        ip=query,
        inventory=inv,
    )
    if args.format == "json":
        # loaded when the command runs: --help and completion build every parser without it
        from ._topology import json_bytes

        write_stdout(json_bytes(report.to_dict()))
    else:
        # only on the way to a message
        from .._text import one_line

        lines = [
            ("ok: " if finding.ok else "") + one_line(str(finding))
            for finding in report.findings
            if args.verbose or not finding.ok
        ]
        checks, problems = len(report.findings), len(report.problems)
        lines.append(
            f"{checks} {'check' if checks == 1 else 'checks'}, {problems} "
            + ("difference" if problems == 1 else "differences")
        )
        write_text("".join(line + "\n" for line in lines))
    if not report.ok:
        fail(f"the container does not match its metadata ({len(report.problems)} differences)")
        return EXIT_FALSE
    return EXIT_OK
