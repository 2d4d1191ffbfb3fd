"""What the in-place writer's fence costs a single writer, measured in one run.

The fence (``dra_metadata._fence``, docs/writing.md "Updating a file in place") is
two ``fcntl`` calls per update: the write lock before the first byte, its release
after the last. This script times, on one file in a temporary directory, rounds
of:

``fence``
    the two calls alone (take the write lock, let it go) on an open descriptor;
``update``
    a whole in-place update as the publisher makes it
    (``dra_metadata._safedir.rewrite_in_place``: open, reserve, truncate, write,
    fsync, close), the fence included;
``update, fence bypassed``
    the same update with the fence's two calls made no-ops, interleaved with the
    above so that both meet the same machine.

It prints the medians and the fence's share; the target is a cost of at most
0.1 ms per update (``--check`` exits 1 past it).

Usage::

    python benchmarks/bench_fence.py            # 2,000 rounds
    python benchmarks/bench_fence.py --rounds 200 --check
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dra_metadata as dm  # noqa: E402 - after the path set-up, so the checkout is measured
from dra_metadata import _fence, _safedir  # noqa: E402

#: The most the fence may add to one update, in milliseconds.
TARGET_MS = 0.1


def stream() -> bytes:
    """A one-request stream of 8 devices, as a NIC driver's update writes."""
    devices = tuple(dm.Device("x.example.com", "p", f"dev-{i}") for i in range(8))
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=2),
        requests=(dm.DeviceMetadataRequest("r", devices),),
    )
    return dm.encode(md)


def _no_fence(fd: int, *, wait: float = 0.0) -> bool:
    return True


def _no_release(fd: int) -> None:
    return None


def measure(rounds: int) -> dict[str, float]:
    """Median microseconds per round of each case."""
    data = stream()
    fence: list[float] = []
    fenced: list[float] = []
    bypassed: list[float] = []
    real = (getattr(_safedir, "exclusive"), getattr(_safedir, "release"))  # noqa: B009
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "metadata.json")
        _safedir.rewrite_in_place(path, data)
        fd = os.open(path, os.O_WRONLY)
        try:
            for _ in range(rounds):
                begun = time.perf_counter()
                _fence.exclusive(fd)
                _fence.release(fd)
                fence.append(time.perf_counter() - begun)
        finally:
            os.close(fd)
        for _ in range(rounds):
            begun = time.perf_counter()
            _safedir.rewrite_in_place(path, data)
            fenced.append(time.perf_counter() - begun)
            setattr(_safedir, "exclusive", _no_fence)  # noqa: B010
            setattr(_safedir, "release", _no_release)  # noqa: B010
            try:
                begun = time.perf_counter()
                _safedir.rewrite_in_place(path, data)
                bypassed.append(time.perf_counter() - begun)
            finally:
                setattr(_safedir, "exclusive", real[0])  # noqa: B010
                setattr(_safedir, "release", real[1])  # noqa: B010
    return {
        "fence_us": statistics.median(fence) * 1e6,
        "update_us": statistics.median(fenced) * 1e6,
        "update_bypassed_us": statistics.median(bypassed) * 1e6,
    }


def main() -> int:
    """Run and print; with ``--check``, exit 1 when the fence costs more than the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--check", action="store_true", help="exit 1 past the target")
    args = parser.parse_args()
    figures = measure(args.rounds)
    added = figures["update_us"] - figures["update_bypassed_us"]
    print(f"fence alone (lock + unlock): {figures['fence_us']:.1f} us")
    print(f"in-place update, fenced:     {figures['update_us']:.1f} us")
    print(f"in-place update, bypassed:   {figures['update_bypassed_us']:.1f} us")
    print(
        f"the fence's share: {figures['fence_us'] / figures['update_us']:.1%} of an update; "
        f"difference of the medians {added:+.1f} us (target: <= {TARGET_MS * 1000:.0f} us)"
    )
    if args.check and figures["fence_us"] > TARGET_MS * 1000:
        print(f"MISSED: the fence costs {figures['fence_us']:.1f} us", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
