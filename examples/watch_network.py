"""A service that configures its network as soon as the NIC driver has filled it in.

The pod has a claim ``nic`` whose request ``eth`` an SR-IOV driver serves. At
prepare the driver writes generation 1 with the device's identity only; the
interface name, IPs and MAC follow in a later generation (normally before the
containers start, sometimes after). The service registers handlers on a
:class:`dra_metadata.MetadataWatcher`:

* ``update``: when every device has network data, configure it (here: print
  what a real service would hand to its network stack), and again whenever a
  newer generation changes it;
* ``stale``: the file was replaced on the node after this container started, so
  no newer data can arrive: say so;
* ``error`` and ``removed``: report them.

Run it against the sample tree, where the data is already there::

    DRA_METADATA_ROOT=examples/dra-device-attributes python examples/watch_network.py --once

``--once`` exits after the first configuration; without it the service keeps
running (and reconfiguring) until SIGTERM or Ctrl-C. ``--timeout SECONDS``
gives up (exit 1) when no network data arrived by then. In a real pod, leave
``DRA_METADATA_ROOT`` unset.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading

import dra_metadata as dm


class NetworkService:
    """The part of a service that cares about its network: configure, reconfigure."""

    def __init__(self) -> None:
        self.configured = threading.Event()
        self.generation: int | None = None

    def on_update(self, event: dm.WatchEvent) -> None:
        """A new generation: configure when every device has network data."""
        md = event.merged
        if md is None:
            return
        if not dm.has_network_data(md):
            print(f"generation {event.generation}: no network data yet, waiting", flush=True)
            return
        for _request, device in md.devices():
            net = device.network_data
            assert net is not None  # has_network_data() checked every device
            print(
                f"configured {net.interface_name} ips={','.join(net.ips)} "
                f"mac={net.hardware_address} (device {device.name}, "
                f"generation {event.generation})",
                flush=True,
            )
        self.generation = event.generation
        self.configured.set()

    def on_stale(self, event: dm.WatchEvent) -> None:
        """The node replaced the file after we started: we keep what we have."""
        print(f"warning: {event.message}", file=sys.stderr, flush=True)

    def on_trouble(self, event: dm.WatchEvent) -> None:
        """A file that does not decode, or that went away."""
        print(f"{event.kind}: {event.message or event.path}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the service; the exit code is 0, or 1 when no network data came in time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claim", default="nic", help="the claim's name (default: nic)")
    parser.add_argument("--request", default="eth", help="the request's name (default: eth)")
    parser.add_argument("--once", action="store_true", help="exit after configuring once")
    parser.add_argument("--timeout", type=float, help="seconds to wait for network data")
    args = parser.parse_args(argv)

    service = NetworkService()
    watcher = dm.MetadataWatcher(claim=args.claim, request=args.request)
    watcher.add_handler(service.on_update, dm.WatchEventKind.UPDATE)
    watcher.add_handler(service.on_stale, dm.WatchEventKind.STALE)
    watcher.add_handler(service.on_trouble, dm.WatchEventKind.ERROR)
    watcher.add_handler(service.on_trouble, dm.WatchEventKind.REMOVED)

    finished = threading.Event()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: finished.set())
    print(f"waiting for network data of {args.claim}/{args.request}", flush=True)
    with watcher:
        if not service.configured.wait(args.timeout):
            print(f"no network data after {args.timeout}s", file=sys.stderr)
            return 1
        if not args.once:
            with contextlib.suppress(KeyboardInterrupt):
                finished.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
