"""Links below the root, and special files, where a watched request has directories and files.

The one policy (``ls``, ``get``, ``env`` and the scanner already keep it): the
root may be a symbolic link, nothing below it is followed. A link where the
kind directory, the claim, the request or a metadata file should be is refused
with the scanner's :class:`~dra_metadata.SymlinkError` (after ``error_timeout``,
one ``error`` event, as for any file that does not read), and inotify watches
below the root do not follow links. Everything is a real link on a real tree.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata._select import scan
from dra_metadata._watch._backends.inotify import Inotify
from tests.conftest import run_cli

DRIVER = "x.example.com"
FILE = f"{DRIVER}-metadata.json"


def stream(generation: int = 1) -> bytes:
    return dm.encode(dm.DeviceMetadata(metadata=dm.ObjectMeta(uid="u", generation=generation)))


def linked_tree(tmp_path: Path, where: str) -> Path:
    """A root whose ``where`` (kind, claim, request or file) is a link to a real one elsewhere."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    real = elsewhere / "resourceclaims" / "c" / "r"
    real.mkdir(parents=True)
    (real / FILE).write_bytes(stream())
    levels = {
        "kind": (root, elsewhere / "resourceclaims", "resourceclaims"),
        "claim": (root / "resourceclaims", elsewhere / "resourceclaims" / "c", "c"),
        "request": (root / "resourceclaims" / "c", real, "r"),
        "file": (root / "resourceclaims" / "c" / "r", real / FILE, FILE),
    }
    parent, target, name = levels[where]
    parent.mkdir(parents=True, exist_ok=True)
    (parent / name).symlink_to(target)
    return root


WHERE = ["kind", "claim", "request", "file"]


@pytest.mark.parametrize("where", WHERE)
def test_a_link_below_the_root_is_the_scanners_symlink_error(tmp_path: Path, where: str) -> None:
    """watch and awatch: no update, one error event whose error is the scanner's SymlinkError."""
    root = linked_tree(tmp_path, where)
    [entry] = scan(root, kind="claim")
    assert entry.problem is not None
    assert isinstance(entry.problem.error, dm.SymlinkError)
    events = list(dm.watch(claim="c", request="r", root=str(root), error_timeout=0.2, timeout=1))
    assert [event.kind for event in events] == [dm.WatchEventKind.ERROR]
    assert isinstance(events[0].error, dm.SymlinkError)
    assert str(events[0].error) == str(entry.problem.error)

    async def twin() -> list[dm.WatchEvent]:
        found = dm.awatch(claim="c", request="r", root=str(root), error_timeout=0.2, timeout=1)
        return [event async for event in found]

    assert [str(event.error) for event in asyncio.run(twin())] == [str(entry.problem.error)]
    with pytest.raises(dm.WaitTimeoutError, match="symbolic link"):
        dm.wait_for(claim="c", request="r", root=str(root), timeout=0.5)


def test_the_root_itself_may_be_a_link(tmp_path: Path) -> None:
    """A root that is a link is followed, as the readers follow it."""
    real = tmp_path / "real"
    (real / "resourceclaims" / "c" / "r").mkdir(parents=True)
    (real / "resourceclaims" / "c" / "r" / FILE).write_bytes(stream(3))
    (tmp_path / "root").symlink_to(real)
    events = list(dm.watch(claim="c", request="r", root=str(tmp_path / "root"), timeout=0))
    assert [(event.kind, event.generation) for event in events] == [(dm.WatchEventKind.UPDATE, 3)]


def test_a_link_replaced_by_a_real_directory_is_picked_up(tmp_path: Path) -> None:
    """Swapping the linked claim for a real directory mid-watch: its file is delivered."""
    root = linked_tree(tmp_path, "claim")
    events = dm.watch(claim="c", request="r", root=str(root), error_timeout=0.2, timeout=20)
    seen = []
    for event in events:
        seen.append(event.kind)
        if event.kind == dm.WatchEventKind.ERROR:
            link = root / "resourceclaims" / "c"
            link.unlink()
            (link / "r").mkdir(parents=True)
            (link / "r" / FILE).write_bytes(stream(2))
        elif event.kind == dm.WatchEventKind.UPDATE:
            assert event.generation == 2
            break
    events.close()
    assert seen == [dm.WatchEventKind.ERROR, dm.WatchEventKind.UPDATE]


def test_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    """A FIFO named like a metadata file: one error event, "not a regular file"; no hang."""
    directory = tmp_path / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    os.mkfifo(directory / FILE)
    events = list(
        dm.watch(claim="c", request="r", root=str(tmp_path), error_timeout=0.2, timeout=1)
    )
    assert [event.kind for event in events] == [dm.WatchEventKind.ERROR]
    assert "not a regular file" in events[0].message


def test_cli_watch_prints_the_link_as_an_error_line(tmp_path: Path) -> None:
    """``dra-metadata watch`` on a linked claim: an error line naming the link, exit 0."""
    root = linked_tree(tmp_path, "claim")
    done = run_cli("watch", "--claim=c", "--request=r", f"--root={root}", "--timeout=3")
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert '"event":"error"' in line
    assert "links below the metadata root are not followed" in line


def test_inotify_does_not_follow_a_link_unless_asked(tmp_path: Path) -> None:
    """A file watch on a link hears nothing when its target is written; follow=True does."""
    target = tmp_path / "target"
    target.write_bytes(b"1")
    link = tmp_path / "link"
    link.symlink_to(target)
    for follow, heard in ((False, set()), (True, {str(link)})):
        notifier = Inotify()
        try:
            assert notifier.add(str(link), directory=False, follow=follow) == 0
            target.write_bytes(b"2")
            assert notifier.wait(0.2)[0] == heard
        finally:
            notifier.close()
