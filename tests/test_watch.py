"""Watching a request's files and waiting for deferred metadata, on real files and mounts."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import dra_metadata as dm
from dra_metadata._watch import FileState
from dra_metadata._watch._backends.base import QUIET, Handles
from dra_metadata._watch._session import Tracked, signature
from dra_metadata.testing import MetadataTree, MountedMetadataTree, MountUnavailableError
from tests.conftest import REPO, SAMPLE_ROOT, nic_tree

#: Generous bound for waiting on a condition (a loaded CI machine); never a latency claim.
WAIT = 30.0


def gen(generation: int, uid: str = "uid-1", *, network: bool = False) -> dm.DeviceMetadata:
    """A one-device object of claim ``uid`` at ``generation``."""
    net = dm.NetworkDeviceData(interface_name="net1", ips=("10.0.0.5/24",)) if network else None
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid=uid, generation=generation),
        requests=(
            dm.DeviceMetadataRequest("r", (dm.Device("d.x", "p", "dev-0", network_data=net),)),
        ),
    )


def kinds(changes: list[Any]) -> list[str]:
    return [change.kind.value for change in changes]


# --- the per-file decisions, without I/O -------------------------------------------------


def test_first_complete_object_is_an_update_and_a_repeat_is_not() -> None:
    """The first decoded object is delivered; the same UID and generation again is not."""
    state = FileState("f")
    [change] = state.decoded(gen(1), nlink=1, now=0.0)
    assert (change.kind, change.generation, change.claim_uid) == ("update", 1, "uid-1")
    assert change.metadata == gen(1)
    assert state.decoded(gen(1), nlink=1, now=1.0) == []
    assert kinds(state.decoded(gen(2), nlink=1, now=2.0)) == ["update"]


def test_generations_never_go_backwards_for_one_claim_uid() -> None:
    """An older generation of the same claim is not delivered, and keeps the newer one."""
    state = FileState("f")
    state.decoded(gen(3), nlink=1, now=0.0)
    assert state.decoded(gen(2), nlink=1, now=1.0) == []
    assert state.good == gen(3)
    assert state.delivered == ("uid-1", 3)


def test_a_new_claim_uid_is_a_new_object_whatever_its_generation() -> None:
    """A claim prepared again (new UID) is delivered even with a lower generation."""
    state = FileState("f")
    state.decoded(gen(4), nlink=1, now=0.0)
    [change] = state.decoded(gen(1, "uid-2"), nlink=1, now=1.0)
    assert (change.kind, change.generation, change.claim_uid) == ("update", 1, "uid-2")


def test_undecodable_reads_are_retried_with_a_bounded_backoff() -> None:
    """Retries start at 1 ms, double, stay at most 0.1 s apart and end at the error deadline."""
    state = FileState("f", error_timeout=1.0)
    now, gaps = 0.0, []
    while True:
        assert state.broken(dm.DecodeError("torn"), now=now) == []
        assert state.retry_at is not None
        gaps.append(round(state.retry_at - now, 6))
        now = state.retry_at
        if now >= 1.0:
            break
    assert gaps[:4] == [0.001, 0.002, 0.004, 0.008]
    assert max(gaps) == 0.1
    assert now == 1.0  # the last retry lands exactly on the deadline


def test_a_file_undecodable_past_the_error_timeout_gives_one_error_event() -> None:
    """After error_timeout seconds of failed reads: one error event, then quiet."""
    state = FileState("f", error_timeout=2.0)
    state.decoded(gen(1), nlink=1, now=0.0)
    error = dm.DecodeError("f: no metadata objects found in stream")
    assert state.broken(error, now=1.0) == []
    assert state.broken(error, now=2.9) == []
    [change] = state.broken(error, now=3.0)
    assert change.kind == "error"
    assert change.error is error
    assert (change.generation, change.claim_uid, change.metadata) == (1, "uid-1", None)
    assert change.message == "not decodable for 2.0s: f: no metadata objects found in stream"
    assert state.retry_at is None
    assert state.broken(error, now=9.0) == []


def test_a_complete_read_ends_a_bad_spell() -> None:
    """A good read after an error delivers a new generation, and a later spell errors anew."""
    state = FileState("f", error_timeout=0.0)
    assert kinds(state.broken(dm.DecodeError("x"), now=0.0)) == ["error"]
    assert kinds(state.decoded(gen(2), nlink=1, now=1.0)) == ["update"]
    assert state.retry_at is None
    assert not state.broken_now
    assert kinds(state.broken(dm.DecodeError("x"), now=2.0)) == ["error"]


def test_a_zero_link_count_gives_one_stale_event_that_explains_itself() -> None:
    """st_nlink == 0 on the mounted file: one stale event naming the last generation."""
    state = FileState("/ctr/f")
    state.decoded(gen(2), nlink=1, now=0.0)
    [stale] = state.decoded(gen(2), nlink=0, now=1.0)
    assert stale.kind == "stale"
    assert (stale.generation, stale.metadata) == (2, gen(2))
    assert "later updates cannot reach this container" in stale.message
    assert "/ctr/f" in stale.message
    assert state.decoded(gen(2), nlink=0, now=2.0) == []


def test_a_stale_file_seen_first_gives_update_then_stale() -> None:
    """A file already replaced on the node at start: its content first, then the warning."""
    assert kinds(FileState("f").decoded(gen(1), nlink=0, now=0.0)) == ["update", "stale"]


def test_a_zero_link_count_on_an_undecodable_file_is_stale_at_once() -> None:
    """A torn file the node replaced can never complete: stale now, error at the deadline."""
    state = FileState("f", error_timeout=1.0)
    state.decoded(gen(1), nlink=1, now=0.0)
    [stale] = state.broken(dm.DecodeError("x"), nlink=0, now=1.0)
    assert (stale.kind, stale.generation, stale.metadata) == ("stale", 1, None)
    assert "the file it keeps does not decode" in stale.message
    assert kinds(state.broken(dm.DecodeError("x"), nlink=0, now=2.0)) == ["error"]


def test_the_safety_net_reads_a_file_again_unless_stat_proves_it_unchanged(
    tmp_path: Path,
) -> None:
    """A re-read is skipped only for the same stat, last read well after the last change."""
    path = tmp_path / "f-metadata.json"
    path.write_bytes(b"{}")
    info = os.stat(path)
    changed = max(info.st_mtime_ns, info.st_ctime_ns) / 1e9
    tracked = Tracked(FileState(str(path)))
    tracked.signature, tracked.read_at = signature(info), changed + 0.5
    assert not tracked.unchanged(info)  # read too soon after the change: could hide one
    tracked.read_at = changed + 2.5
    assert tracked.unchanged(info)
    path.write_bytes(b"{ }")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # an mtime put back fools nothing
    assert not tracked.unchanged(os.stat(path))


def test_removal_is_news_only_for_files_the_user_heard_of() -> None:
    """Removed is delivered after an update or error; after it, the same object is new again."""
    state = FileState("f")
    assert state.absent(now=0.0) == []
    state.decoded(gen(3), nlink=1, now=1.0)
    [removed] = state.absent(now=2.0)
    assert (removed.kind, removed.generation, removed.claim_uid) == ("removed", 3, "uid-1")
    assert state.good is None
    assert kinds(state.decoded(gen(3), nlink=1, now=3.0)) == ["update"]
    torn = FileState("g", error_timeout=0.0)
    torn.broken(dm.DecodeError("x"), now=0.0)
    assert kinds(torn.absent(now=1.0)) == ["removed"]


# --- the rule for writers that take no fence, without I/O ---------------------------------


def write_alone(handles: Handles, at: float) -> bool:
    """One writer opens, writes, closes at ``at`` (a few ms); whether its close is worth a look."""
    handles.opened(now=at)
    handles.modified(now=at + 0.001)
    return handles.closed(wrote=True, now=at + 0.002)


def read(handles: Handles) -> None:
    """The watch read the file (nothing raced the read)."""
    assert handles.read(handles.writes)


def test_a_writer_alone_is_read_on_its_close_the_first_one_too() -> None:
    """Rule 2: the close that ends a spell with one writer; no first-writer wait."""
    handles = Handles()
    assert handles.ready(0.0)  # nothing written: any look may read
    handles.opened(now=1.0)
    handles.modified(now=1.001)
    assert not handles.ready(1.001)  # not closed yet
    assert handles.closed(wrote=True, now=1.002)
    assert handles.ready(1.002)
    read(handles)
    assert write_alone(handles, 2.0)


def test_a_reader_or_another_watch_never_holds_a_writer_back_for_long() -> None:
    """A read that ends after the writer's close: read at that close; one held: QUIET at most."""
    handles = Handles()
    handles.opened(now=1.0)  # the writer
    handles.modified(now=1.001)
    handles.opened(now=1.002)  # another watch's read
    assert not handles.closed(wrote=True, now=1.003)  # the writer's close: one still open
    assert handles.closed(wrote=False, now=1.004)  # the read is over: the spell too
    read(handles)
    handles.opened(now=2.0)  # a reader that holds the file
    assert not write_alone(handles, 2.1)
    assert handles.due(2.2) == 2.0 + QUIET  # forgotten then, which ends the spell
    assert not handles.announce(2.9)
    assert handles.announce(3.0)
    read(handles)
    assert write_alone(handles, 3.1)  # the held reader is forgotten: at the close again


def test_two_writers_in_one_spell_are_read_once_quiet() -> None:
    """Rule 3: writes that may have interleaved are read when none has come for QUIET."""
    handles = Handles()
    handles.opened(now=1.0)
    handles.opened(now=1.001)
    handles.modified(now=1.002)
    handles.modified(now=1.003)
    assert not handles.closed(wrote=True, now=1.004)
    assert not handles.closed(wrote=True, now=1.005)
    assert not handles.ready(1.005 + QUIET / 2)
    assert handles.due(1.1) == 1.003 + QUIET
    assert handles.announce(1.003 + QUIET)
    read(handles)
    assert write_alone(handles, 3.0)  # the next spell, one writer: its close again


def test_a_write_nobody_opened_for_casts_doubt_for_quiet_only() -> None:
    """Rule 4: a truncate by path, two opens heard as one: QUIET after it, then at the close."""
    handles = Handles()
    handles.modified(now=1.0)  # os.truncate(path): no open
    assert not handles.closed(wrote=True, now=1.1)  # a writer's close within QUIET: doubt
    assert handles.ready(1.0 + QUIET)
    read(handles)
    assert write_alone(handles, 1.0 + QUIET + 0.1)  # nothing outlives the window
    read(handles)
    # Two handles heard as one open (merged): the first close looks final, the second
    # handle's write shows the doubt, and every close waits until QUIET has passed.
    handles.opened(now=5.0)
    handles.modified(now=5.001)
    assert handles.closed(wrote=True, now=5.002)  # nothing tells it from a final close
    read(handles)
    handles.modified(now=5.02)  # the rest, through the handle not counted
    assert not handles.closed(wrote=True, now=5.021)
    assert not write_alone(handles, 5.2)
    assert handles.ready(5.202 + QUIET)


def test_quiet_bytes_wait_for_a_handle_opened_since_the_last_write() -> None:
    """Rule 3: a handle opened after the write may write through a mapping, unheard."""
    handles = Handles()
    handles.opened(now=1.0)  # a reader that holds the file: the spell never ends
    write_alone(handles, 1.1)
    handles.opened(now=1.9)  # a mapped writer opens, and writes without a write event
    assert not handles.ready(1.101 + QUIET)
    assert not handles.announce(1.0 + QUIET)  # the reader forgotten; the mapped writer not
    assert handles.due(2.0) == 1.9 + QUIET
    assert handles.announce(1.9 + QUIET)


def test_a_writers_open_taken_for_a_readers_still_ends_its_spell_at_its_close() -> None:
    """A read right after a writer's open takes that open for a reader's: its close still counts."""
    handles = Handles()
    handles.opened(now=1.0)  # the writer's open, merged with a watch's read's into one
    handles.modified(now=1.001)
    assert not handles.accessed(now=1.002)  # the read takes the one open counted
    assert handles.closed(wrote=True, now=1.003)  # the writer's close: the spell is over


def test_a_close_with_no_write_is_worth_a_look_and_a_readers_close_is_not() -> None:
    """A read-write handle closed with no write: a look (a mapped write?); a reader's: none."""
    handles = Handles()
    handles.opened(now=1.0)
    assert handles.closed(wrote=True, now=1.001)
    handles.opened(now=2.0)
    assert not handles.closed(wrote=False, now=2.001)


def test_a_read_raced_by_a_write_is_not_final() -> None:
    """A write heard while the watch read: that read decides nothing."""
    handles = Handles()
    write_alone(handles, 1.0)
    mark = handles.writes
    handles.opened(now=1.01)
    handles.modified(now=1.011)
    assert not handles.read(mark)
    assert handles.written_at == 1.011


def test_lost_events_make_the_bytes_wait_quiet() -> None:
    """An overflow of the queue: nothing counted is known; read once QUIET has passed."""
    handles = Handles()
    handles.opened(now=3.0)
    handles.lost(now=3.5)
    assert not handles.closed(wrote=True, now=3.6)
    assert handles.due(3.6) == 3.5 + QUIET


# --- conditions ------------------------------------------------------------------------------


def test_has_network_data_needs_every_device_to_have_some() -> None:
    """Every device needs a filled-in NetworkDeviceData, and there must be a device."""
    assert dm.has_network_data(gen(2, network=True))
    assert not dm.has_network_data(gen(1))
    assert not dm.has_network_data(dm.DeviceMetadata())
    empty = dm.Device("d.x", "p", "dev-1", network_data=dm.NetworkDeviceData())
    mixed = dm.DeviceMetadata(
        requests=(
            dm.DeviceMetadataRequest("r", (*gen(2, network=True).requests[0].devices, empty)),
        )
    )
    assert not dm.has_network_data(mixed)


def test_has_generation_and_has_attribute_read_every_file_and_device() -> None:
    """has_generation looks at every merged file; has_attribute at every device."""
    merged = dm.read_resource_claim("train", "accel", root=SAMPLE_ROOT)
    assert dm.has_generation(1)(merged)
    assert not dm.has_generation(2)(merged)
    assert dm.has_attribute("resource.kubernetes.io/pcieRoot")(merged)
    assert not dm.has_attribute("uuid")(merged)  # the RDMA device has none
    assert dm.has_generation(1)(gen(1))
    with pytest.raises(TypeError):
        dm.has_generation(True)
    with pytest.raises(ValueError, match="empty"):
        dm.has_attribute("")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("vfIdx", "did you mean 'vfIndex'?"),
        ("interfaceName", "interfaceName is network data, not an attribute"),
        ("hardwareAddres", "hardwareAddress is network data, not an attribute"),
        ("firmware", ""),  # nothing close: the device alone
    ],
)
def test_a_wait_for_an_attribute_not_there_says_what_is_nearby(name: str, said: str) -> None:
    """The timeout names the device without the attribute and what get would say of it."""
    with pytest.raises(dm.WaitTimeoutError) as caught:
        dm.wait_for(
            claim="nic", request="eth", root=SAMPLE_ROOT, until=dm.has_attribute(name), timeout=0.1
        )
    message = str(caught.value)
    where = "device worker-1/enp94s0f0v3" + (f": {said}" if said else ")")
    assert f"without attribute {name} ({where}" in message
    assert caught.value.last_seen is not None


def one_device(**attributes: dm.DeviceAttribute) -> dm.DeviceMetadata:
    """A request of one device of driver dra.cpu with ``attributes``."""
    device = dm.Device("dra.cpu", "node-a", "cpu-0", attributes)
    return dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("cpus", (device,)),))


def test_a_standard_attribute_counts_by_its_meaning_as_get_answers_it() -> None:
    """numaNodes asks for the list; a negative node is no node and a pciBusID that is
    no PCI address is none (KEP-6072, get's answers), each saying why."""
    nic = dm.read_resource_claim("nic", "eth", root=SAMPLE_ROOT)  # numaNode [1, 0]
    assert dm.has_attribute("numaNodes")(nic)
    assert dm.has_attribute("resource.kubernetes.io/numaNodes")(nic)
    no_node = one_device(numaNode=dm.DeviceAttribute(int=-1))
    for name in ("numaNode", "numaNodes", "resource.kubernetes.io/numaNode"):
        condition = dm.has_attribute(name)
        assert not condition(no_node)
        reason = condition.why_not(no_node)  # type: ignore[attr-defined]
        assert "dra.cpu/numaNode is negative: no NUMA affinity" in reason
    assert dm.has_attribute("numaNode")(one_device(numaNode=dm.DeviceAttribute(ints=(0, -1))))
    bad_pci = one_device(pciBusID=dm.DeviceAttribute(string="slot 3"))
    condition = dm.has_attribute("pciBusID")
    assert not condition(bad_pci)
    reason = condition.why_not(bad_pci)  # type: ignore[attr-defined]
    assert "dra.cpu/pciBusID holds 'slot 3', which is not a PCI address" in reason
    assert dm.has_attribute("pciBusID")(one_device(pciBusID=dm.DeviceAttribute(string="3b:00.0")))
    missing = dm.has_attribute("pcieRoot")
    reason = missing.why_not(one_device())  # type: ignore[attr-defined]
    assert "looked for dra.cpu/pcieRoot, resource.kubernetes.io/pcieRoot" in reason


# --- the API's shape ---------------------------------------------------------------------


def test_the_twins_take_identical_parameters() -> None:
    """watch/awatch and wait_for/await_for have the same parameters and defaults."""
    assert inspect.signature(dm.watch).parameters == inspect.signature(dm.awatch).parameters
    assert inspect.signature(dm.wait_for).parameters == inspect.signature(dm.await_for).parameters
    watch_params = set(inspect.signature(dm.watch).parameters)
    assert set(inspect.signature(dm.MetadataWatcher).parameters) <= watch_params


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"claim": "..", "request": "r"}, dm.InvalidNameError),
        ({"claim": "c", "request": "r", "driver": "../x"}, dm.InvalidNameError),
        ({"claim": "c", "pod_claim": "c", "request": "r"}, TypeError),
        ({"request": "r"}, TypeError),
        ({"claim": "c", "request": "r", "rescan_interval": 0}, ValueError),
        ({"claim": "c", "request": "r", "backend": "poll"}, ValueError),
    ],
)
def test_bad_arguments_fail_when_called_not_when_iterated(
    kwargs: dict[str, Any], error: type[Exception], tmp_path: Path
) -> None:
    """Names and options are checked by the call itself, before any iteration."""
    for function in (dm.watch, dm.awatch):
        with pytest.raises(error):
            function(root=tmp_path, **kwargs)
    with pytest.raises(error):
        dm.MetadataWatcher(root=tmp_path, **kwargs)


def test_every_backend_opens_a_notifier_and_an_unknown_one_is_named() -> None:
    """Each backend= value opens something that meets the Notifier protocol at run time."""
    from dra_metadata._watch._backends import BACKENDS, Notifier, check_backend, open_notifier

    assert BACKENDS == ("auto", "inotify", "watchfiles", "polling")
    for backend in BACKENDS:
        notifier = open_notifier(check_backend(backend))
        try:
            assert isinstance(notifier, Notifier), backend
        finally:
            notifier.close()
    message = "backend must be 'auto', 'inotify', 'watchfiles' or 'polling', not 'poll'"
    with pytest.raises(ValueError, match=message):
        check_backend("poll")


# --- a watch running in a thread, with the test taking its events -----------------------


class Watching:
    """dm.watch() running in a thread; the test takes its events with timeouts."""

    def __init__(self, **kwargs: Any) -> None:
        self.events: queue.Queue[dm.WatchEvent | BaseException | None] = queue.Queue()
        self.stop = threading.Event()
        self.seen: list[dm.WatchEvent] = []
        self.thread = threading.Thread(target=self._run, args=(kwargs,), daemon=True)
        self.thread.start()

    def _run(self, kwargs: dict[str, Any]) -> None:
        try:
            for event in dm.watch(stop_event=self.stop, **kwargs):
                self.events.put(event)
        except BaseException as err:
            self.events.put(err)
        else:
            self.events.put(None)

    def next(self, timeout: float = WAIT) -> dm.WatchEvent:
        try:
            item = self.events.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no watch event within {timeout:g}s; seen: {self.summary()}")
        if isinstance(item, BaseException):
            raise item
        if item is None:
            pytest.fail(f"the watch ended; seen: {self.summary()}")
        self.seen.append(item)
        return item

    def until(
        self, predicate: Callable[[dm.WatchEvent], bool], timeout: float = WAIT
    ) -> dm.WatchEvent:
        deadline = time.monotonic() + timeout
        while True:
            event = self.next(max(0.0, deadline - time.monotonic()))
            if predicate(event):
                return event

    def summary(self) -> list[tuple[str, str, int | None]]:
        return [(e.kind.value, e.driver, e.generation) for e in self.seen]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


@pytest.fixture
def watching() -> Iterator[Callable[..., Watching]]:
    """Start watches in threads; every one is stopped and joined at teardown."""
    started: list[Watching] = []

    def start(**kwargs: Any) -> Watching:
        watch = Watching(**kwargs)
        started.append(watch)
        return watch

    yield start
    for watch in started:
        watch.close()


def test_files_present_at_start_come_first_with_the_whole_merged_view(
    dra_metadata_tree: MetadataTree, watching: Callable[..., Watching]
) -> None:
    """Initial files arrive as updates, in name order, each event carrying every file merged."""
    nic_tree(dra_metadata_tree, "b.example.com", "a.example.com")
    watch = watching(claim="nic", request="eth")
    first, second = watch.next(), watch.next()
    assert [(e.kind, e.driver, e.generation) for e in (first, second)] == [
        ("update", "a.example.com", 1),
        ("update", "b.example.com", 1),
    ]
    for event in (first, second):
        assert event.merged is not None
        assert [s.driver for s in event.merged.sources] == ["a.example.com", "b.example.com"]
    assert first.metadata is not None
    assert first.metadata.requests[0].devices[0].driver == "a.example.com"
    assert first.claim_uid == first.metadata.metadata.uid


def test_in_place_update_of_a_bind_mounted_file_is_delivered(
    dra_metadata_mounted_tree: MountedMetadataTree, watching: Callable[..., Watching]
) -> None:
    """A node writer rewriting the mounted file in place is seen: the new generation, whole."""
    tree = dra_metadata_mounted_tree
    [nic] = nic_tree(tree, "sriov.example.com")
    assert nic.path in tree.mounted
    watch = watching(claim="nic", request="eth")
    assert watch.next().generation == 1
    nic.network(interface_name="net1", ips=["10.0.0.5/24"], hardware_address="02:00:00:00:00:01")
    tree.update(mode="in-place")
    event = watch.until(lambda e: e.kind == "update")
    assert event.generation == 2
    assert event.merged is not None
    assert dm.has_network_data(event.merged)
    assert event.metadata == dm.read_file(nic.path)


def test_rename_on_the_node_is_reported_as_stale_once(
    dra_metadata_mounted_tree: MountedMetadataTree, watching: Callable[..., Watching]
) -> None:
    """A rename over the node file leaves the mount on the old inode: one stale event."""
    tree = dra_metadata_mounted_tree
    nic, marker = nic_tree(tree, "a.example.com", "b.example.com")
    watch = watching(claim="nic", request="eth", rescan_interval=0.05)
    watch.next()
    watch.next()
    tree.update(nic, mode="rename")
    stale = watch.next()
    assert (stale.kind, stale.driver, stale.generation) == ("stale", "a.example.com", 1)
    assert "cannot reach this container" in stale.message
    assert os.stat(nic.path).st_nlink == 0
    marker.set(model="x")
    tree.update(marker, mode="in-place")
    assert tree.generation(marker) == 2
    after = watch.next()
    assert (after.kind, after.driver, after.generation) == ("update", "b.example.com", 2)


def test_rename_in_a_plain_directory_is_an_update(
    dra_metadata_tree: MetadataTree, watching: Callable[..., Watching]
) -> None:
    """Without a mount a rename shows the new file at the path: an ordinary update."""
    [nic] = nic_tree(dra_metadata_tree, "sriov.example.com")
    watch = watching(claim="nic", request="eth")
    watch.next()
    nic.network(interface_name="net1")
    dra_metadata_tree.update(mode="rename")
    event = watch.next()
    assert (event.kind, event.generation) == ("update", 2)


def test_a_write_right_after_a_rename_is_heard_without_the_safety_net(
    dra_metadata_tree: MetadataTree,
) -> None:
    """A file renamed into place is delivered before its watch is added; nothing is lost.

    The in-place write lands after the renamed file was delivered and before the
    watch resumes (so before its file watch exists): the look that follows the
    added watch reads it, long before the (here one-minute) rescan would.
    """
    [nic] = nic_tree(dra_metadata_tree, "sriov.example.com")
    events = dm.watch(claim="nic", request="eth", timeout=WAIT, rescan_interval=60.0)
    try:
        assert next(events).generation == 1
        nic.network(interface_name="net1")
        dra_metadata_tree.update(mode="rename")
        assert (next(events).kind, dra_metadata_tree.generation(nic)) == ("update", 2)
        nic.network(interface_name="net2")
        dra_metadata_tree.update(mode="in-place")
        event = next(events)
        assert (event.kind, event.generation) == ("update", 3)
        assert event.metadata == dm.read_file(nic.path)
    finally:
        events.close()


def test_only_the_entries_asked_for_wake_a_directory_watch(tmp_path: Path) -> None:
    """A writer's temporary file in the request directory wakes nobody; a metadata file does."""
    from dra_metadata._watch._backends.inotify import Inotify

    notifier = Inotify()
    try:
        assert notifier.add(str(tmp_path), directory=True, entries="-metadata.json") == 0
        (tmp_path / ".x-metadata.json.tmp").write_bytes(b"{}")
        os.rename(tmp_path / ".x-metadata.json.tmp", tmp_path / ".x.tmp")
        assert notifier.wait(0.2) == (set(), False)
        os.rename(tmp_path / ".x.tmp", tmp_path / "x-metadata.json")
        assert notifier.wait(0.2) == ({str(tmp_path / "x-metadata.json")}, False)
        assert notifier.add(str(tmp_path), directory=True) == 0  # every entry again
        (tmp_path / "other").write_bytes(b"")
        assert notifier.wait(0.2) == ({str(tmp_path / "other")}, False)
    finally:
        notifier.close()


def test_removed_claim_gives_a_removed_event(
    dra_metadata_mounted_tree: MountedMetadataTree, watching: Callable[..., Watching]
) -> None:
    """Unpreparing the claim (files gone, mounts gone) gives removed; the merged view empties."""
    tree = dra_metadata_mounted_tree
    nic_tree(tree, "sriov.example.com")
    watch = watching(claim="nic", request="eth")
    watch.next()
    tree.remove(tree.claim("nic"))
    event = watch.until(lambda e: e.kind != "error")
    assert (event.kind, event.generation, event.metadata, event.merged) == (
        "removed",
        1,
        None,
        None,
    )


def test_a_claim_prepared_again_is_a_new_object(
    dra_metadata_tree: MetadataTree, watching: Callable[..., Watching]
) -> None:
    """Removed, then prepared again with a new UID at generation 1: removed, then update."""
    nic_tree(dra_metadata_tree, "sriov.example.com")
    dra_metadata_tree.update(dra_metadata_tree.claim("nic"))
    watch = watching(claim="nic", request="eth")
    assert watch.next().generation == 2
    dra_metadata_tree.remove(dra_metadata_tree.claim("nic"))
    assert watch.next().kind == "removed"
    claim = dra_metadata_tree.claim("nic", uid="uid-again")
    claim.request("eth").device("sriov.example.com", "node-a", "vf-0")
    dra_metadata_tree.write()
    event = watch.next()
    assert (event.kind, event.generation, event.claim_uid) == ("update", 1, "uid-again")


def test_a_torn_write_is_never_delivered_and_its_completion_is(
    dra_metadata_mounted_tree: MountedMetadataTree, watching: Callable[..., Watching]
) -> None:
    """Empty and half-written files give no event; the completed write gives the update."""
    tree = dra_metadata_mounted_tree
    [nic] = nic_tree(tree, "sriov.example.com")
    watch = watching(claim="nic", request="eth")
    watch.next()
    nic.network(interface_name="net1")
    tree.tear(nic, size=0)
    tree.tear(nic)
    tree.write(mode="in-place")
    event = watch.next()
    assert (event.kind, event.generation) == ("update", 2)
    assert event.merged is not None
    assert dm.has_network_data(event.merged)


def test_a_file_that_stays_torn_becomes_an_error_event(
    dra_metadata_tree: MetadataTree, watching: Callable[..., Watching]
) -> None:
    """A file undecodable for error_timeout seconds is delivered as an error, not swallowed."""
    [nic] = nic_tree(dra_metadata_tree, "sriov.example.com")
    watch = watching(claim="nic", request="eth", error_timeout=0.2)
    watch.next()
    dra_metadata_tree.tear(nic)
    event = watch.next()
    assert (event.kind, event.generation, event.metadata) == ("error", 1, None)
    assert isinstance(event.error, dm.DecodeError)
    assert event.message.startswith("not decodable for ")
    assert str(nic.path) in event.message
    assert event.merged is not None  # the last good object still counts
    dra_metadata_tree.write()
    assert (watch.next().kind, watch.seen[-1].generation) == ("update", 2)


def test_several_drivers_each_file_is_watched_and_merged(
    dra_metadata_mounted_tree: MountedMetadataTree, watching: Callable[..., Watching]
) -> None:
    """An update of one driver's file carries the merged view of all files."""
    tree = dra_metadata_mounted_tree
    gpu, rdma = nic_tree(tree, "gpu.example.com", "rdma.example.com")
    watch = watching(claim="nic", request="eth")
    watch.next()
    watch.next()
    rdma.network(interface_name="rdma0")
    tree.update(rdma, mode="in-place")
    event = watch.next()
    assert (event.driver, event.generation) == ("rdma.example.com", 2)
    assert event.merged is not None
    assert [s.generation for s in event.merged.sources] == [1, 2]
    devices = [d for _r, d in event.merged.devices()]
    assert [d.name for d in devices] == [gpu.name, rdma.name]
    assert devices[1].network_data == dm.NetworkDeviceData(interface_name="rdma0")


def test_only_the_named_drivers_file_is_watched(
    dra_metadata_tree: MetadataTree, watching: Callable[..., Watching]
) -> None:
    """With driver=, other drivers' files give no events and stay out of the merged view."""
    _gpu, rdma = nic_tree(dra_metadata_tree, "gpu.example.com", "rdma.example.com")
    watch = watching(claim="nic", request="eth", driver="rdma.example.com")
    first = watch.next()
    assert first.driver == "rdma.example.com"
    assert first.merged is not None
    assert [s.driver for s in first.merged.sources] == ["rdma.example.com"]
    dra_metadata_tree.update(dra_metadata_tree.claim("nic"))  # both files, gpu first
    assert (watch.next().driver, watch.seen[-1].generation) == ("rdma.example.com", 2)
    assert rdma.path.exists()


def test_the_safety_net_finds_what_no_notification_reports(
    dra_metadata_mounted_tree: MountedMetadataTree, watching: Callable[..., Watching]
) -> None:
    """A mount appearing over a file sends no event; the periodic re-read still finds it."""
    tree = dra_metadata_mounted_tree
    request = tree.claim("nic", uid="uid-node").request("eth")
    nic = request.device("sriov.example.com", "node-a", "vf-0")
    nic.path.parent.mkdir(parents=True)
    nic.path.write_bytes(dm.encode(gen(7, "uid-old")))
    watch = watching(claim="nic", request="eth", rescan_interval=0.1)
    assert (watch.next().generation, watch.seen[-1].claim_uid) == (7, "uid-old")
    tree.write()  # mounts the node file over the plain one: no inotify event at all
    assert nic.path in tree.mounted
    event = watch.next()
    assert (event.kind, event.generation, event.claim_uid) == ("update", 1, "uid-node")
    nic.network(interface_name="net1")
    tree.update(mode="in-place")  # the watch moved to the mounted file: heard at once
    assert watch.next().generation == 2


def test_watch_ends_at_its_timeout_and_on_its_stop_event(dra_metadata_tree: MetadataTree) -> None:
    """timeout= ends the iteration; so does a set stop event."""
    nic_tree(dra_metadata_tree, "sriov.example.com")
    start = time.monotonic()
    events = list(dm.watch(claim="nic", request="eth", timeout=0.2))
    assert [e.kind for e in events] == ["update"]
    assert time.monotonic() - start >= 0.2
    stop = threading.Event()
    stop.set()
    assert [e.kind for e in dm.watch(claim="nic", request="eth", stop_event=stop)] == ["update"]


@pytest.mark.parametrize("backend", ["inotify", "watchfiles", "polling"])
def test_each_backend_follows_the_lifecycle(
    backend: str, dra_metadata_tree: MetadataTree, watching: Callable[..., Watching]
) -> None:
    """Both backends: initial file, in-place update, a file appearing, removal."""
    claim = dra_metadata_tree.claim("nic")
    request = claim.request("eth")
    nic = request.device("a.example.com", "node-a", "vf-0")
    dra_metadata_tree.write()
    watch = watching(claim="nic", request="eth", backend=backend)
    assert watch.next().driver == "a.example.com"
    nic.set(model="x")
    dra_metadata_tree.update(mode="in-place")
    assert (watch.next().generation, watch.seen[-1].kind) == (2, "update")
    request.device("b.example.com", "node-a", "vf-1")
    dra_metadata_tree.write()
    assert (watch.next().driver, watch.seen[-1].generation) == ("b.example.com", 1)
    dra_metadata_tree.remove(claim)
    removed = {watch.next().driver, watch.next().driver}
    assert removed == {"a.example.com", "b.example.com"}
    assert {e.kind for e in watch.seen[-2:]} == {"removed"}


# --- files and directories that appear later (asyncio: the watch is set up first) -----


async def set_up(events: Any) -> asyncio.Future[dm.WatchEvent]:
    """Start taking the next event; return once the watch is set up and waiting."""
    task: asyncio.Future[dm.WatchEvent] = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0)  # one step of the task: it sets up, looks, and waits
    assert not task.done()
    return task


async def first_event(events: Any) -> dm.WatchEvent:
    """The next event of an async watch, within the generous bound."""
    event: dm.WatchEvent = await asyncio.wait_for(events.__anext__(), WAIT)
    return event


def test_a_request_directory_and_its_parents_appearing_later_are_picked_up(
    tmp_path: Path,
) -> None:
    """Nothing exists at the start (not even the root): the file is seen when it appears."""
    root = tmp_path / "root"

    async def main() -> dm.WatchEvent:
        events = dm.awatch(claim="nic", request="eth", root=root)
        try:
            task = await set_up(events)
            tree = MetadataTree(root)
            tree.claim("nic").request("eth").device("sriov.example.com", "node-a", "vf-0")
            tree.write()
            return await asyncio.wait_for(task, WAIT)
        finally:
            await events.aclose()

    event = asyncio.run(main())
    assert (event.kind, event.driver, event.generation) == ("update", "sriov.example.com", 1)


def test_a_mount_made_after_the_watch_started_is_followed(tmp_path: Path) -> None:
    """The empty mount point, then the mount: the watch moves to the mounted file."""
    try:
        tree = MountedMetadataTree(tmp_path / "node", tmp_path / "ctr", mode="in-place")
    except MountUnavailableError as err:
        pytest.skip(f"bind mounts unavailable: {err.reason}")

    async def main() -> list[dm.WatchEvent]:
        events = dm.awatch(claim="nic", request="eth", root=tree.root)
        try:
            task = await set_up(events)
            nic = tree.claim("nic").request("eth").device("sriov.example.com", "node-a", "v")
            tree.write()
            first = await asyncio.wait_for(task, WAIT)
            nic.network(interface_name="net1")
            tree.update(mode="in-place")
            return [first, await first_event(events)]
        finally:
            await events.aclose()

    with tree:
        first, second = asyncio.run(main())
    assert (first.kind, first.generation) == ("update", 1)
    assert (second.kind, second.generation) == ("update", 2)


def test_awatch_ends_on_an_asyncio_stop_event(dra_metadata_tree: MetadataTree) -> None:
    """An asyncio.Event set while awatch waits ends the iteration."""
    nic_tree(dra_metadata_tree, "sriov.example.com")

    async def main() -> list[str]:
        stop = asyncio.Event()
        seen = []
        async for event in dm.awatch(claim="nic", request="eth", stop_event=stop):
            seen.append(event.kind.value)
            stop.set()
        return seen

    assert asyncio.run(asyncio.wait_for(main(), WAIT)) == ["update"]


def test_awatch_delivers_what_watch_delivers(dra_metadata_tree: MetadataTree) -> None:
    """The async twin gives the same events for the same files."""
    nic_tree(dra_metadata_tree, "a.example.com", "b.example.com")
    sync = [(e.kind, e.path, e.generation) for e in dm.watch(claim="nic", request="eth", timeout=0)]

    async def collect() -> list[tuple[str, str, int | None]]:
        events = dm.awatch(claim="nic", request="eth", timeout=0)
        return [(e.kind, e.path, e.generation) async for e in events]

    assert asyncio.run(collect()) == sync
    assert len(sync) == 2


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_cancelling_awatch_leaves_no_thread_task_or_descriptor(
    dra_metadata_tree: MetadataTree,
) -> None:
    """After cancel the thread count, the loop's tasks and the open descriptors are as before."""
    nic_tree(dra_metadata_tree, "sriov.example.com")
    threads, fds = threading.active_count(), open_fds()

    async def main() -> tuple[int, int]:
        got = asyncio.Event()

        async def consume() -> None:
            async for _event in dm.awatch(claim="nic", request="eth"):
                got.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(got.wait(), WAIT)
        during = open_fds()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        assert asyncio.all_tasks() == {asyncio.current_task()}
        return during, open_fds()

    during, after = asyncio.run(main())
    # The inotify descriptor and the request directory, open while watching, are closed.
    assert during == after + 2
    assert threading.active_count() == threads
    assert open_fds() == fds


# --- a real writer process racing the watch ----------------------------------------------

_WRITER = r"""
import os, sys
import dra_metadata as dm

path, uid, first, last, renames = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
for generation in range(first, last + 1):
    devices = tuple(
        dm.Device("d.x", "p", f"dev-{i}", attributes={"gen": dm.DeviceAttribute(int=generation)})
        for i in range(generation % 7 + 1)
    )
    data = dm.encode(dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid=uid, generation=generation),
        requests=(dm.DeviceMetadataRequest("eth", devices),),
    ))
    if renames and generation % 5 == 0:
        temp = path + ".tmp"
        with open(temp, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    else:  # in place, in two writes: readers meet empty and half-written files
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, data[: len(data) // 2])
        os.write(fd, data[len(data) // 2 :])
        os.close(fd)
"""


def whole(md: dm.DeviceMetadata) -> bool:
    """Whether ``md`` is exactly what the writer wrote for its generation."""
    generation = md.metadata.generation
    devices = [d for _r, d in md.devices()]
    return len(devices) == generation % 7 + 1 and all(
        d.attribute("gen") == generation for d in devices
    )


def race(watch: Watching, host: Path, uid: str, *, renames: bool) -> list[int]:
    """Run the writer for generations 2..300; return the generations delivered."""
    last = 300
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(host), uid, "2", str(last), str(int(renames))],
        cwd=REPO,
    )
    delivered: list[int] = []
    try:
        while not delivered or delivered[-1] != last:
            event = watch.next()
            assert event.kind == "update", (event.kind, event.message)
            assert event.metadata is not None
            assert whole(event.metadata), event.metadata
            delivered.append(event.metadata.metadata.generation)
    finally:
        writer.wait(WAIT)
    assert writer.returncode == 0
    return delivered


def test_a_racing_writer_never_yields_a_torn_object_and_its_last_generation_arrives(
    dra_metadata_mounted_tree: MountedMetadataTree, watching: Callable[..., Watching]
) -> None:
    """In-place writes through a bind mount: whole objects only, increasing, the last one in."""
    tree = dra_metadata_mounted_tree
    claim = tree.claim("nic")
    nic = claim.request("eth").device("d.x", "p", "dev-0")
    tree.write()
    watch = watching(claim="nic", request="eth")
    assert watch.next().generation == 1
    delivered = race(watch, nic.host_path, claim.uid, renames=False)
    assert delivered == sorted(set(delivered))


def test_a_racing_writer_mixing_in_place_and_rename_in_a_plain_tree(
    dra_metadata_tree: MetadataTree, watching: Callable[..., Watching]
) -> None:
    """Without a mount, renames and in-place writes mixed: whole objects, the last one in."""
    claim = dra_metadata_tree.claim("nic")
    nic = claim.request("eth").device("d.x", "p", "dev-0")
    dra_metadata_tree.write()
    watch = watching(claim="nic", request="eth")
    assert watch.next().generation == 1
    delivered = race(watch, nic.path, claim.uid, renames=True)
    assert delivered == sorted(set(delivered))


# --- waiting -------------------------------------------------------------------------------


def test_wait_for_returns_once_network_data_arrives(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """wait_for sees generation 1 without network data, then returns the merged generation 2."""
    tree = dra_metadata_mounted_tree
    [nic] = nic_tree(tree, "sriov.example.com")
    looked = threading.Event()

    def until(md: dm.DeviceMetadata) -> bool:
        looked.set()
        return dm.has_network_data(md)

    result: queue.Queue[dm.MergedDeviceMetadata | BaseException] = queue.Queue()

    def run() -> None:
        try:
            result.put(dm.wait_for(claim="nic", request="eth", until=until, timeout=WAIT))
        except BaseException as err:
            result.put(err)

    waiter = threading.Thread(target=run)
    waiter.start()
    assert looked.wait(WAIT)  # it has seen generation 1 and keeps waiting
    assert result.empty()
    nic.network(interface_name="net1", ips=["10.0.0.5/24"])
    tree.update(mode="in-place")
    waiter.join(WAIT)
    md = result.get_nowait()
    assert isinstance(md, dm.MergedDeviceMetadata)
    assert md.sources[0].generation == 2
    assert dm.has_network_data(md)


def test_wait_for_without_a_condition_waits_for_a_decodable_file(
    dra_metadata_tree: MetadataTree,
) -> None:
    """Plain existence: a request that has a file that decodes."""
    nic_tree(dra_metadata_tree, "sriov.example.com")
    md = dm.wait_for(claim="nic", request="eth", timeout=WAIT)
    assert [s.driver for s in md.sources] == ["sriov.example.com"]


def test_wait_for_timeouts_say_what_was_last_seen(dra_metadata_tree: MetadataTree) -> None:
    """No file, an undecodable file, generation 1 without network data: each is named."""
    with pytest.raises(dm.WaitTimeoutError) as nothing:
        dm.wait_for(claim="nic", request="eth", timeout=0.1)
    assert "last seen: no metadata file (no directory " in str(nothing.value)
    assert nothing.value.last_seen is None
    assert isinstance(nothing.value, TimeoutError)
    [nic] = nic_tree(dra_metadata_tree, "sriov.example.com")
    with pytest.raises(dm.WaitTimeoutError) as lacking:
        dm.wait_for(claim="nic", request="eth", until=dm.has_network_data, timeout=0.1)
    assert str(lacking.value) == (
        f"timed out after 0.1s waiting for network data on every device in "
        f"{nic.path.parent}; last seen: sriov.example.com-metadata.json generation 1 "
        "without network data (device node-a/vf-0)"
    )
    assert lacking.value.last_seen is not None
    assert lacking.value.path == str(nic.path.parent)
    dra_metadata_tree.tear(nic)
    with pytest.raises(dm.WaitTimeoutError, match=r"-metadata\.json does not decode: "):
        dm.wait_for(claim="nic", request="eth", timeout=0.1)


def test_await_for_is_the_async_twin(dra_metadata_tree: MetadataTree) -> None:
    """await_for returns the same merged metadata, and times out the same way."""
    nic_tree(dra_metadata_tree, "sriov.example.com")
    md = asyncio.run(dm.await_for(claim="nic", request="eth", until=dm.has_generation(1)))
    assert md == dm.wait_for(claim="nic", request="eth", until=dm.has_generation(1))
    with pytest.raises(dm.WaitTimeoutError, match="waiting for generation 2 or later"):
        asyncio.run(dm.await_for(claim="nic", request="eth", until=dm.has_generation(2), timeout=0))


# --- handlers ----------------------------------------------------------------------------


def test_metadata_watcher_calls_handlers_by_kind_and_survives_a_failing_one(
    dra_metadata_tree: MetadataTree, caplog: pytest.LogCaptureFixture
) -> None:
    """Handlers run per kind in order; one that raises is logged; stop() ends the thread."""
    [nic] = nic_tree(dra_metadata_tree, "sriov.example.com")
    updates: queue.Queue[int | None] = queue.Queue()
    everything: list[str] = []
    watcher = dm.MetadataWatcher(claim="nic", request="eth")

    @watcher.on("update")
    def broken(event: dm.WatchEvent) -> None:
        raise RuntimeError("handler bug")

    watcher.add_handler(lambda event: updates.put(event.generation), dm.WatchEventKind.UPDATE)
    watcher.add_handler(lambda event: everything.append(event.kind.value))
    with caplog.at_level(logging.ERROR, logger="dra_metadata"), watcher:
        assert watcher.running
        assert updates.get(timeout=WAIT) == 1
        nic.network(interface_name="net1")
        dra_metadata_tree.update()
        assert updates.get(timeout=WAIT) == 2
    assert not watcher.running
    assert watcher.exception is None
    assert everything == ["update", "update"]
    assert "handler bug" in caplog.text
    with pytest.raises(RuntimeError, match="started already"):
        watcher.start()


# --- the example and the benchmark -------------------------------------------------------


def test_watch_network_example_configures_when_network_data_arrives(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """examples/watch_network.py waits at generation 1 and configures at generation 2."""
    tree = dra_metadata_mounted_tree
    [nic] = nic_tree(tree, "sriov.example.com")
    service = subprocess.Popen(
        [sys.executable, "examples/watch_network.py", "--once", "--timeout", str(WAIT)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert service.stdout is not None
    try:
        assert service.stdout.readline() == "waiting for network data of nic/eth\n"
        assert service.stdout.readline() == "generation 1: no network data yet, waiting\n"
        nic.network(
            interface_name="net1", ips=["10.0.0.5/24"], hardware_address="02:00:00:aa:bb:cc"
        )
        tree.update(mode="in-place")
        out, err = service.communicate(timeout=WAIT)
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()
    assert service.returncode == 0, err
    assert (
        out == "configured net1 ips=10.0.0.5/24 mac=02:00:00:aa:bb:cc (device vf-0, generation 2)\n"
    )


def test_watch_network_example_runs_against_the_sample_tree() -> None:
    """On the sample tree the network data is there: configured at once, exit 0."""
    done = subprocess.run(
        [sys.executable, "examples/watch_network.py", "--once", "--timeout", str(WAIT)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, dm.ROOT_ENV: str(SAMPLE_ROOT)},
        timeout=WAIT * 2,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "waiting for network data of nic/eth",
        "configured net1 ips=10.20.30.41/24,fd00:10:20::29/64 mac=52:54:00:ab:cd:03 "
        "(device enp94s0f0v3, generation 2)",
    ]


def test_watch_network_example_gives_up_after_its_timeout(tmp_path: Path) -> None:
    """Without network data in time the example exits 1 with one line on stderr."""
    done = subprocess.run(
        [sys.executable, "examples/watch_network.py", "--once", "--timeout", "0.2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, dm.ROOT_ENV: str(tmp_path)},
        timeout=WAIT,
    )
    assert done.returncode == 1
    assert done.stderr == "no network data after 0.2s\n"


def test_watch_benchmark_quick_run_reports_every_figure() -> None:
    """benchmarks/bench_watch.py --quick --json runs and has the documented shape."""
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_watch.py", "--quick", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) == {
        "environment",
        "latency",
        "bursts",
        "idle_cpu_percent",
        "ratios",
        "targets",
    }
    contenders = ["dra_metadata.watch", "raw inotify, every event", "raw inotify, on close"]
    assert [(case["writer"], case["name"]) for case in report["latency"]] == [
        *(("truncate", name) for name in contenders),
        ("truncate", "watchfiles default"),
        *(("pwrite", name) for name in contenders),
        *(("rename", name) for name in contenders),
    ]
    for how in ("truncate", "pwrite", "rename"):
        assert f"{how}: dra_metadata.watch / raw inotify, on close (median)" in report["ratios"]
    for case in report["latency"]:
        assert set(case) >= {"n", "median_ms", "p90_ms", "p99_ms", "max_ms", "torn_delivered"}
    assert set(report["idle_cpu_percent"]) == {
        "dra_metadata.watch",
        "watchfiles default",
        "watchfiles step=5",
    }
    assert {target["name"] for target in report["targets"]} >= {
        "truncate writer: median / raw inotify on close (per-round ratio, median)",
        "pwrite writer: median / raw inotify on close (per-round ratio, median)",
        "rename writer: median / raw inotify on close (per-round ratio, median)",
        "median latency, slowest writer (ms)",
        "p99 latency, slowest writer (ms)",
        "torn objects delivered (every writer, bursts)",
        "torn objects delivered, same-length in-place (pwrite) writer",
        "idle CPU, 100 files (% of one core)",
    }
    assert all(isinstance(target["ok"], bool) for target in report["targets"])


# --- review findings ------------------------------------------------------------------------


def test_a_bad_spell_longer_than_a_thousand_retries_keeps_backing_off() -> None:
    """Retries past the 1024th (a file torn for minutes, a long error_timeout) stay 0.1 s apart."""
    state = FileState("f", error_timeout=float("inf"))
    now = 0.0
    for _ in range(1100):
        assert state.broken(dm.DecodeError("torn"), now=now) == []
        assert state.retry_at is not None
        assert 0 < state.retry_at - now <= 0.1 + 1e-9
        now = state.retry_at


def raw_request_dir(root: Path) -> Path:
    """The directory of claim c, request r under ``root``, created."""
    directory = root / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    return directory


def test_a_fifo_named_like_a_metadata_file_cannot_hang_the_watch(tmp_path: Path) -> None:
    """A FIFO among the files gives an error event and the watch ends at its timeout."""
    directory = raw_request_dir(tmp_path)
    fifo = directory / "fifo.example.com-metadata.json"
    os.mkfifo(fifo)
    (directory / "good.example.com-metadata.json").write_bytes(dm.encode(gen(1)))
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(
                list(dm.watch(claim="c", request="r", root=tmp_path, timeout=0, error_timeout=0))
            )
        except BaseException as err:
            result.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT)
    if thread.is_alive():  # release the read blocked in open(), then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(WAIT)
        pytest.fail("the watch hung on the FIFO")
    [events] = result
    assert [(e.kind.value, e.driver) for e in events] == [
        ("error", "fifo.example.com"),
        ("update", "good.example.com"),
    ]
    assert "not a regular file" in events[0].message


def test_a_file_nested_too_deep_for_the_decoder_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """Content that exhausts the recursion limit gives an error event, not a RecursionError."""
    directory = raw_request_dir(tmp_path)
    (directory / "deep.example.com-metadata.json").write_bytes(b'{"a":' * 20000)
    events = list(dm.watch(claim="c", request="r", root=tmp_path, timeout=0, error_timeout=0))
    assert [e.kind.value for e in events] == ["error"]
    assert isinstance(events[0].error, dm.DecodeError)


def test_an_infinite_rescan_interval_waits_for_events_alone(tmp_path: Path) -> None:
    """rescan_interval=inf (no safety net) waits on notifications instead of overflowing poll."""
    directory = raw_request_dir(tmp_path)
    path = directory / "d.example.com-metadata.json"
    path.write_bytes(dm.encode(gen(1)))
    events = dm.watch(claim="c", request="r", root=tmp_path, rescan_interval=float("inf"))
    try:
        assert next(events).generation == 1
        path.write_bytes(dm.encode(gen(2)))  # in place: queued before the watch waits
        assert next(events).generation == 2
    finally:
        events.close()


def test_a_file_deleted_and_recreated_on_the_same_inode_number_is_watched_again(
    tmp_path: Path,
) -> None:
    """After IN_IGNORED the watch is re-added even when the new file reuses the inode number."""
    directory = raw_request_dir(tmp_path)
    path = directory / "d.example.com-metadata.json"
    path.write_bytes(dm.encode(gen(1)))
    events = dm.watch(
        claim="c", request="r", root=tmp_path, rescan_interval=3600, timeout=WAIT, backend="inotify"
    )
    try:
        assert next(events).generation == 1
        inode = path.stat().st_ino
        path.unlink()
        path.write_bytes(dm.encode(gen(2)))
        if path.stat().st_ino != inode:
            pytest.skip("this file system did not reuse the inode number")
        assert next(events).generation == 2
        path.write_bytes(dm.encode(gen(3)))  # in place: only a watch on the file hears it
        event = next(events)
        assert (event.kind, event.generation) == ("update", 3)
    finally:
        events.close()
