"""No signal can wedge a claim: an interrupt at any step leaves no lock and no descriptor.

A publisher call holds its signals back (``dra_metadata._publish._call``): a
handler that raises (Python's SIGINT handler raises ``KeyboardInterrupt``) runs
when the call's locks are let go, or at the safe point of a lock wait. Tested
with real signals (``signal.raise_signal``, ``os.kill``), never by raising the
exception by hand:

* at every line the publisher runs during a prepare, an update and an unprepare
  (a trace function counts them, then raises SIGINT at each in turn): the
  interrupt is never lost (one ``KeyboardInterrupt`` per signal), and afterwards
  no lock is held, no descriptor is left open, the handler is the process's own
  again, and the next call takes the claim at once;
* a storm of SIGINTs at random moments for 15 seconds
  (``DRA_METADATA_STORM_SECONDS``) at a process doing prepare, update and
  unprepare in a loop: afterwards the same process prepares the claim with a lock
  timeout of 0, with no more descriptors than before;
* a call waiting for a lock another process holds ends at Ctrl-C at once, not at
  its timeout;
* a call in another thread leaves the main thread's handlers alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import dra_metadata as dm
from tests.conftest import REPO
from tests.test_lockfile import can_lock, held_elsewhere

CLAIM = dm.ClaimRef(name="c", namespace="ns", uid="u1")
PACKAGE = Path(dm.__file__).parent
#: The code a step can land in: the publisher's layers and the directory layer under them.
TRACED = (str(PACKAGE / "_publish"), str(PACKAGE / "_safedir.py"), str(PACKAGE / "_fence.py"))
STORM_SECONDS = float(os.environ.get("DRA_METADATA_STORM_SECONDS", "15"))

Tracer = Callable[[FrameType, str, Any], Any]


def publisher(tmp: Path, lock_timeout: float = 5.0) -> dm.MetadataPublisher:
    return dm.MetadataPublisher(
        "gpu.example.com",
        plugin_data_dir=tmp / "plugin",
        cdi_dir=tmp / "cdi",
        lock_timeout=lock_timeout,
    )


def open_fds() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def free(path: str) -> bool:
    """Whether nobody (this process included) holds ``path``'s lock: missing is free."""
    return not os.path.exists(path) or can_lock(path)


def traced(on_line: Callable[[], None]) -> Tracer:
    """A trace function calling ``on_line`` at each line run in the publisher's code."""

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            on_line()
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if not frame.f_code.co_filename.startswith(TRACED):
            return None
        return local(frame, event, arg)

    return tracer


def run_traced(call: Callable[[], object], on_line: Callable[[], None]) -> None:
    sys.settrace(traced(on_line))
    try:
        call()
    finally:
        sys.settrace(None)


CALLS: dict[str, tuple[bool, Callable[[dm.MetadataPublisher, dm.Device], object]]] = {
    # name: (prepared before, the call)
    "prepare": (False, lambda pub, gpu: pub.prepare(CLAIM, "gpu", [gpu])),
    "prepare again": (True, lambda pub, gpu: pub.prepare(CLAIM, "gpu", [gpu])),
    "update": (True, lambda pub, gpu: pub.update(CLAIM, "gpu", [gpu])),
    "update in place": (True, lambda pub, gpu: pub.update(CLAIM, "gpu", [gpu], mode="in-place")),
    "unprepare": (True, lambda pub, _gpu: pub.unprepare(CLAIM)),
}


@pytest.mark.parametrize("name", CALLS)
def test_an_interrupt_at_every_step_is_delivered_and_leaves_nothing_held(
    tmp_path: Path, name: str
) -> None:
    """SIGINT at each line in turn: one KeyboardInterrupt each, no lock or descriptor left."""
    prepared, call = CALLS[name]
    pub = publisher(tmp_path)
    gpu = pub.device("n", "gpu-0", attributes={"uuid": "GPU-1"})
    pub.prepare(CLAIM, "gpu", [gpu])  # the directories, the imports
    pub.unprepare(CLAIM)
    handler = signal.getsignal(signal.SIGINT)
    assert handler is signal.default_int_handler

    def setup() -> None:
        pub.unprepare(CLAIM)
        if prepared:
            pub.prepare(CLAIM, "gpu", [gpu])

    setup()
    lines = 0

    def count() -> None:
        nonlocal lines
        lines += 1

    run_traced(lambda: call(pub, gpu), count)
    assert lines > 50  # the trace sees the publisher's code
    before = open_fds()
    delivered = 0
    for step in range(1, lines + 1):
        setup()
        seen = 0

        def at_step(step: int = step) -> None:
            nonlocal seen
            seen += 1
            if seen == step:
                signal.raise_signal(signal.SIGINT)

        try:
            run_traced(lambda: call(pub, gpu), at_step)
        except KeyboardInterrupt:
            delivered += 1
        assert open_fds() == before, f"step {step}"
        assert free(pub.lock_path(CLAIM)), f"step {step}"
        assert free(pub.cdi_lock_path(CLAIM)), f"step {step}"
        assert signal.getsignal(signal.SIGINT) is handler
    assert delivered == lines  # not one interrupt lost
    at_once = publisher(tmp_path, lock_timeout=0)
    at_once.prepare(CLAIM, "gpu", [gpu])
    at_once.unprepare(CLAIM)
    assert os.listdir(pub.cdi_dir) == []


STORM = textwrap.dedent(
    """
    import json, os, signal, sys, time
    sys.path.insert(0, sys.argv[1])
    import dra_metadata as dm
    tmp = sys.argv[2]

    def make(timeout):
        return dm.MetadataPublisher("gpu.example.com", plugin_data_dir=tmp + "/plugin",
                                    cdi_dir=tmp + "/cdi", lock_timeout=timeout)

    stop = False
    armed = False  # the driver loop's own code is outside what the test is about

    def on_usr1(signum, frame):  # the end of the storm (held back during a call, too)
        global stop
        stop = True

    def on_int(signum, frame):  # raise KeyboardInterrupt, once per time the loop arms it
        global armed
        if armed:
            armed = False
            raise KeyboardInterrupt

    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGINT, on_int)
    pub = make(5.0)
    claim = dm.ClaimRef(name="c", namespace="ns", uid="u1")
    gpu = pub.device("n", "gpu-0", attributes={"uuid": "GPU-1"})
    pub.prepare(claim, "gpu", [gpu])
    pub.unprepare(claim)
    before = len(os.listdir("/proc/self/fd"))
    calls = interrupts = 0
    print("ready", flush=True)
    # The handler raises only while the loop is armed, and disarms itself as it raises:
    # an interrupt lands anywhere in the three calls (the publisher holds it back), never
    # in the loop's own bookkeeping, however late a loaded machine runs it.
    while not stop:
        try:
            armed = True
            pub.prepare(claim, "gpu", [gpu])
            calls += 1
            pub.update(claim, "gpu", [gpu])
            calls += 1
            pub.unprepare(claim)
            calls += 1
            armed = False
        except KeyboardInterrupt:
            interrupts += 1
    armed = False
    after = len(os.listdir("/proc/self/fd"))
    started = time.monotonic()
    make(0).prepare(claim, "gpu", [gpu])  # a lock left held would fail at once
    prepared_in = time.monotonic() - started
    make(0).unprepare(claim)
    print(json.dumps({"calls": calls, "interrupts": interrupts, "before": before,
                      "after": after, "prepared_in": prepared_in}), flush=True)
    """
)


def test_a_storm_of_real_sigints_leaves_the_claim_free_and_no_descriptor(tmp_path: Path) -> None:
    """Random SIGINTs at a working driver: afterwards it prepares at once, fds as before."""
    proc = subprocess.Popen(
        [sys.executable, "-c", STORM, str(REPO), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    sent = 0
    pauses = [0.0002 * (1 + (i * 7919) % 50) for i in range(997)]  # 0.2-10 ms, spread
    end = time.monotonic() + STORM_SECONDS
    try:
        while time.monotonic() < end and proc.poll() is None:
            time.sleep(pauses[sent % len(pauses)])
            os.kill(proc.pid, signal.SIGINT)
            sent += 1
        time.sleep(0.05)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGUSR1)
    finally:
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    figures = json.loads(out.strip().splitlines()[-1])
    assert sent > 100 * STORM_SECONDS
    assert figures["interrupts"] > 10 * STORM_SECONDS  # most land inside a call
    assert figures["calls"] > 10 * STORM_SECONDS
    assert figures["after"] <= figures["before"]
    assert figures["prepared_in"] < 1.0
    assert os.listdir(tmp_path / "cdi") == []


def test_ctrl_c_ends_a_wait_for_a_lock_at_once(tmp_path: Path) -> None:
    """A call waiting for a lock held elsewhere: KeyboardInterrupt within a second, not 30."""
    pub = publisher(tmp_path, lock_timeout=30)
    gpu = pub.device("n", "gpu-0")
    pub.prepare(CLAIM, "gpu", [gpu])
    before = open_fds()
    with held_elsewhere(pub.lock_path(CLAIM)):
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        started = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            pub.update(CLAIM, "gpu", [gpu])
        waited = time.monotonic() - started
        timer.join()
    assert 0.3 <= waited < 2
    assert open_fds() == before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert pub.update(CLAIM, "gpu", [gpu]).metadata.generation == 2


def test_a_signal_during_a_call_is_handled_when_the_call_has_ended(tmp_path: Path) -> None:
    """A handler that records: it runs once the call is done, after the files are whole."""
    pub = publisher(tmp_path)
    gpu = pub.device("n", "gpu-0")
    seen: list[bool] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        seen.append(os.path.exists(pub.cdi_spec_path(CLAIM, "gpu")))

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        sent = False

        def in_the_node_layer(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal sent
            if not sent and frame.f_code.co_filename.endswith("_node.py"):
                sent = True  # inside the call (its signals held back), nothing written yet
                signal.raise_signal(signal.SIGUSR1)
            return None

        pub.unprepare(CLAIM)
        sys.settrace(in_the_node_layer)
        try:
            pub.prepare(CLAIM, "gpu", [gpu])
        finally:
            sys.settrace(None)
        assert signal.getsignal(signal.SIGUSR1) is handler
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert seen == [True]  # once, and after the spec was written


def test_a_call_in_another_thread_leaves_the_handlers_alone(tmp_path: Path) -> None:
    """Only the main thread runs Python's handlers: a worker's call swaps none."""
    pub = publisher(tmp_path)
    gpu = pub.device("n", "gpu-0")
    seen: list[object] = []

    def work() -> None:
        pub.prepare(CLAIM, "gpu", [gpu])
        seen.append(signal.getsignal(signal.SIGINT))
        pub.unprepare(CLAIM)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert seen == [signal.default_int_handler]
