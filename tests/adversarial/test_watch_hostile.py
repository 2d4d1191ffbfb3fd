"""Hostile nodes for the watch side: inotify used up, deep nesting, torn overwrites,
unreadable directories, links and special files where the layout has files.

Everything is real: a second process of the same (spare) uid holds every inotify
instance the kernel allows that uid; a writer process overwrites a file in place
with ``os.pwrite`` while the watcher reads it; ``chmod 000`` is met by a watcher
running as a real non-root uid; the links and FIFOs are real. Counts are bounded
so that the default run takes seconds; ``-m adversarial_long`` runs the long ones.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata._cli import main as cli_main
from tests.adversarial._asuser import INOTIFY_UID, Child, need_root, run_as

DRIVER = "x.example.com"
FILE = f"{DRIVER}-metadata.json"


def md(generation: int, *, devices: int = 1, uid: str = "uid-1") -> dm.DeviceMetadata:
    """An object of claim ``uid`` whose every device carries ``generation``."""
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid=uid, generation=generation),
        requests=(
            dm.DeviceMetadataRequest(
                "r",
                tuple(
                    dm.Device(
                        DRIVER,
                        "p",
                        f"dev-{i}",
                        attributes={"gen": dm.DeviceAttribute(int=generation)},
                    )
                    for i in range(devices)
                ),
            ),
        ),
    )


@pytest.fixture
def public_root() -> Iterator[Path]:
    """A metadata root every uid may read (pytest's tmp_path is root's alone)."""
    top = Path(tempfile.mkdtemp(prefix="dra-adv-"))
    top.chmod(0o755)
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def request_dir(root: Path, claim: str = "c", request: str = "r") -> Path:
    path = root / "resourceclaims" / claim / request
    path.mkdir(parents=True, exist_ok=True)
    for part in (root / "resourceclaims", root / "resourceclaims" / claim, path):
        part.chmod(0o755)
    return path


def write(path: Path, data: dm.DeviceMetadata) -> None:
    path.write_bytes(dm.encode(data))
    path.chmod(0o644)


def warm_up(root: Path) -> None:
    """Import, in this process, everything a forked child will need after setuid."""
    import watchfiles
    import watchfiles._rust_notify  # noqa: F401

    import dra_metadata._cli._watch
    import dra_metadata._log
    import dra_metadata._mounts
    import dra_metadata._nearby
    import dra_metadata._watch._backends.inotify

    with contextlib.suppress(ImportError):  # the polling backend (new in issue 14)
        import dra_metadata._watch._backends.polling
    import dra_metadata._watch._backends.watchfiles  # noqa: F401

    with redirect_stdout(io.StringIO()):
        cli_main(["wait", "--root", str(root), "--claim", "c", "--request", "r", "--timeout", "0"])
        cli_main(["watch", "--root", str(root), "--claim", "c", "--request", "r", "--timeout", "0"])


# --- 1. inotify instances used up -------------------------------------------------------


def max_user_instances() -> int:
    with open("/proc/sys/fs/inotify/max_user_instances") as limit:
        return int(limit.read())


def hold_every_inotify_instance() -> int:
    """In the child: create inotify instances until the kernel refuses; then sleep."""
    libc = ctypes.CDLL(None, use_errno=True)
    held = 0
    while libc.inotify_init1(os.O_CLOEXEC) >= 0:
        held += 1
    os.write(1, f"{held} {ctypes.get_errno()}\n".encode())
    time.sleep(120)
    return 0


@pytest.fixture
def inotify_used_up() -> Iterator[int]:
    """A real second process of INOTIFY_UID holding every instance that uid may have."""
    need_root()
    if not os.path.exists("/proc/sys/fs/inotify/max_user_instances"):
        pytest.skip("no inotify here")
    holder = Child(INOTIFY_UID, hold_every_inotify_instance)
    try:
        held, code = holder.read_line(30).split()
        # Every instance the sysctl allows (fewer only if other processes of this
        # spare uid already hold some), and the next one is refused with EMFILE.
        assert 0 < int(held) <= max_user_instances()
        assert int(code) == 24  # EMFILE
        yield int(held)
    finally:
        holder.kill()
        holder.wait(10)


def test_wait_polls_when_inotify_and_watchfiles_cannot_start(
    public_root: Path, inotify_used_up: int
) -> None:
    """``wait`` still sees a file that appears, exits 0, and says nothing foreign."""
    directory = request_dir(public_root)
    warm_up(public_root)

    def wait() -> int:
        args = ["wait", "--root", str(public_root), "--claim", "c", "--request", "r"]
        return cli_main([*args, "--generation", "2", "--timeout", "4"])

    child = Child(INOTIFY_UID, wait)
    time.sleep(0.5)
    write(directory / FILE, md(1))
    time.sleep(0.3)
    write(directory / FILE, md(2))
    result = child.wait(30)
    assert result.status == 0, result
    assert b"Traceback" not in result.stderr
    assert b"Rust" not in result.stderr


def test_watch_api_auto_polls_and_the_explicit_backends_fail_cleanly(
    public_root: Path, inotify_used_up: int
) -> None:
    """``backend="auto"`` delivers by polling (logged at INFO); the named ones raise ours."""
    directory = request_dir(public_root)
    write(directory / FILE, md(1))
    os.chown(directory, INOTIFY_UID, INOTIFY_UID)  # the child rewrites the file
    os.chown(directory / FILE, INOTIFY_UID, INOTIFY_UID)
    warm_up(public_root)

    def watch() -> int:
        records: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
        log = logging.getLogger("dra_metadata")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        events = dm.watch(claim="c", request="r", root=str(public_root), timeout=3)
        for event in events:
            if event.generation == 2:
                break
            write(directory / FILE, md(2))
        events.close()
        assert any("polling" in text for text in records), records
        for backend in ("inotify", "watchfiles"):
            explicit = dm.watch(
                claim="c", request="r", root=str(public_root), timeout=0, backend=backend
            )
            with pytest.raises(dm.DRAMetadataError) as caught:
                list(explicit)
            os.write(1, f"{type(caught.value).__name__} {caught.value}\n".encode())
        return 0

    result = run_as(INOTIFY_UID, watch, timeout=30)
    assert result.status == 0, result
    assert result.stdout.count(b"BackendError") == 2, result
    assert b"Too many open files" in result.stdout
    for line in result.stdout.splitlines():  # one line each, naming its backend
        assert line.startswith(b"BackendError cannot watch with "), line


def test_a_backend_that_fails_mid_watch_hands_over_to_polling(
    public_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notifier that breaks after the start: ``auto`` carries on by polling."""
    import dra_metadata._watch._run as run
    from dra_metadata._watch import _backends as backends

    directory = request_dir(public_root)
    write(directory / FILE, md(1))

    class Breaking(backends.BackendError):
        pass

    real_open = backends.open_notifier

    def open_breaking(backend: backends.Backend) -> backends.Notifier:
        notifier = real_open("polling")

        def broken(timeout: float) -> tuple[set[str], bool]:
            raise Breaking("watching with watchfiles failed: Too many open files (os error 24)")

        notifier.wait = broken  # type: ignore[method-assign]
        return notifier

    monkeypatch.setattr(run, "open_notifier", open_breaking)
    events = dm.watch(claim="c", request="r", root=str(public_root), timeout=5)
    seen = []
    for event in events:
        seen.append(event.generation)
        if event.generation == 2:
            break
        write(directory / FILE, md(2))
    events.close()
    assert seen == [1, 2]
    explicit = dm.watch(
        claim="c", request="r", root=str(public_root), timeout=1, backend="watchfiles"
    )
    with pytest.raises(Breaking):
        list(explicit)
