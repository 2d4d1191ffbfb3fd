"""Deferred network data delivered whole: a driver's slow in-place update, a service's watch.

A NIC driver (here a second process) prepares a claim with ``MetadataPublisher``
(generation 1: the device's identity), then fills in the network data in place,
generation 2, the way a running container sees it. The update is made slow on
purpose: the driver takes the fence (docs/writing.md, "Updating a file in
place"), writes the first part of the new object, pauses 500 ms, writes the
rest. Meanwhile another process keeps the file open, as a tool in the pod
might. The service watches with ``dra_metadata.watch``: it never sees the
half-written object, and gets generation 2 whole at the driver's close; a
one-shot read made in the driver's pause waits for the fence and gets it whole
too (without the fence it would read a quarter of an object).

Run it::

    python examples/deferred_update.py [DIR]

``DIR`` plays the node's plugin directory and the container's metadata root
(default: a temporary directory). It prints what the service received and exits 0
when every object was whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dra_metadata as dm

DRIVER = "sriov.example.com"

#: The driver: generation 2 written behind the fence, with a 500 ms pause in the middle.
SLOW_UPDATE = r"""
import fcntl, os, struct, sys, time
path, data = sys.argv[1], sys.stdin.buffer.read()
def lock(kind):  # struct flock over the whole file: type, whence, start, len (0: to the end), pid
    return struct.pack("@hhqqi4x", kind, os.SEEK_SET, 0, 0, 0)
fd = os.open(path, os.O_WRONLY)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock(fcntl.F_WRLCK))  # the fence (no reader holds it here)
os.ftruncate(fd, 0)
os.pwrite(fd, data[: len(data) // 4], 0)
time.sleep(0.5)  # a driver stalled mid-object
os.pwrite(fd, data[len(data) // 4 :], len(data) // 4)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock(fcntl.F_UNLCK))  # let go, then close
os.close(fd)
"""


def main(base: Path) -> int:
    """Prepare, watch, update slowly; return 0 when the service saw only whole objects."""
    pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=base / "plugin", cdi_dir=base / "cdi")
    claim = dm.ClaimRef(name="nic", namespace="default", uid="7d6c5b4a")
    vf = pub.device("worker-1", "enp94s0f0v3", attributes={"vfIndex": dm.DeviceAttribute(int=3)})
    pub.prepare(claim, "eth", [vf])
    node_file = pub.metadata_path(claim, "eth")
    # The container's view, as a plain tree here (a read-only bind mount on a node).
    root = base / "container"
    seen = root / "resourceclaims" / "nic" / "eth"
    seen.mkdir(parents=True)
    os.link(node_file, seen / f"{DRIVER}-metadata.json")

    networked = pub.device(
        "worker-1",
        "enp94s0f0v3",
        attributes={"vfIndex": dm.DeviceAttribute(int=3)},
        network_data=dm.NetworkDeviceData(interface_name="net1", ips=("10.20.30.41/24",)),
    )
    update = dm.encode(pub.metadata(claim, "eth", [networked], generation=2))
    holder = os.open(node_file, os.O_RDONLY)  # another process in the pod holds the file
    events = dm.watch(claim="nic", request="eth", root=root, timeout=10)
    whole = True
    writer: subprocess.Popen[bytes] | None = None
    try:
        for event in events:
            md = event.metadata
            if md is None:
                continue
            has_net = dm.has_network_data(md)
            print(f"generation {event.generation}: network data {'yes' if has_net else 'no'}")
            whole &= event.generation == (2 if has_net else 1)
            if event.generation == 1:  # the driver starts its update; the watch goes on
                started = time.monotonic()
                writer = subprocess.Popen(
                    [sys.executable, "-c", SLOW_UPDATE, node_file], stdin=subprocess.PIPE
                )
                assert writer.stdin is not None
                with writer.stdin:
                    writer.stdin.write(update)
                time.sleep(0.25)  # in the driver's pause: a one-shot read waits for the fence
                begun = time.monotonic()
                now = dm.read_resource_claim("nic", "eth", root=root)
                waited = time.monotonic() - begun
                print(f"a read in the driver's pause: generation {now.generations[DRIVER]}, whole,")
                print(f"  network data {'yes' if dm.has_network_data(now) else 'no'}")
                print(f"  (it waited {waited:.1f} s for the driver to finish)")
                whole &= dm.has_network_data(now)
            else:
                print(f"  delivered {time.monotonic() - started:.2f} s after the update began")
                break
    finally:
        events.close()
        os.close(holder)
    if writer is not None and writer.wait(10) != 0:
        return 1
    print("every object whole" if whole else "a torn object was delivered")
    return 0 if whole else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1])))
    with tempfile.TemporaryDirectory() as scratch:
        sys.exit(main(Path(scratch)))
