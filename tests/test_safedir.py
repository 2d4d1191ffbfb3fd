"""The link-safe file layer the publisher and the testing kit write through, on its own.

Everything runs on real directories: links, hard links, FIFOs and directories
planted where a file or a directory belongs, a umask that would narrow modes,
and directories moved away while they are open. The publisher's own tests
(tests/test_publish.py, tests/adversarial/test_publish_hostile.py) drive the
same layer through ``prepare``, ``update`` and ``unprepare``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata._read import DEFAULT_MAX_SIZE
from dra_metadata._safedir import (
    InTheWay,
    SafeDir,
    made,
    make_dirs,
    replace_file,
    rewrite_in_place,
)


@pytest.fixture
def narrow_umask() -> Iterator[None]:
    """A umask of 077, which would make files 0600 and directories 0700."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the directories under test, 0600, that nothing may change."""
    path = tmp_path / "victim"
    path.write_bytes(b"secret\n")
    path.chmod(0o600)
    return path


def opened(path: Path, what: str = "test") -> SafeDir:
    """``path`` opened as a configured root (it exists)."""
    return made(SafeDir.open_root(str(path), what, create=False))


def mode_of(path: Path) -> int:
    """The permission bits of ``path`` (a link not followed)."""
    return stat.S_IMODE(os.lstat(path).st_mode)


# --- the one-call forms ---------------------------------------------------------------------


@pytest.mark.usefixtures("narrow_umask")
def test_replace_file_gives_a_new_0644_inode_and_leaves_no_temporary(tmp_path: Path) -> None:
    """replace_file renames a new 0644 file over the old; a reader holding the old keeps it."""
    path = tmp_path / "metadata.json"
    replace_file(path, b"one")
    first = path.stat().st_ino
    with open(path, "rb") as held:
        replace_file(path, b"two")
        assert held.read() == b"one"
    assert (path.read_bytes(), mode_of(path)) == (b"two", 0o644)
    assert path.stat().st_ino != first
    assert os.listdir(tmp_path) == ["metadata.json"]


@pytest.mark.usefixtures("narrow_umask")
def test_rewrite_in_place_keeps_the_inode_and_makes_a_missing_file_0644(tmp_path: Path) -> None:
    """rewrite_in_place creates a missing file 0644, then truncates and writes the same inode."""
    path = tmp_path / "metadata.json"
    rewrite_in_place(path, b"a longer first content")
    first = path.stat().st_ino
    path.chmod(0o600)
    rewrite_in_place(path, b"short")
    assert (path.read_bytes(), mode_of(path), path.stat().st_ino) == (b"short", 0o644, first)


@pytest.mark.parametrize("write", [replace_file, rewrite_in_place])
@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "directory"])
def test_a_file_that_is_not_one_regular_file_is_refused(
    tmp_path: Path, victim: Path, write: Callable[[Path, bytes], None], kind: str
) -> None:
    """A link, a hard link, a FIFO or a directory at the path: PublishError, nothing changed."""
    path = tmp_path / "dir" / "metadata.json"
    path.parent.mkdir()
    if kind == "symlink":
        path.symlink_to(victim)
    elif kind == "hardlink":
        os.link(victim, path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    # Opened for writing, a FIFO without a reader and a directory fail before any check.
    refusal = r"a link|not a regular file|a file with 2 links|a directory where a file belongs"
    with pytest.raises(dm.PublishError, match=refusal):
        write(path, b"written")
    assert (victim.read_bytes(), mode_of(victim)) == (b"secret\n", 0o600)
    assert os.listdir(path.parent) == ["metadata.json"]


def test_a_refusal_names_the_target_and_what_was_being_done(tmp_path: Path, victim: Path) -> None:
    """The message is ``<what>: <path>: <reason>``, and the error's path is the target."""
    path = tmp_path / "metadata.json"
    path.symlink_to(victim)
    with pytest.raises(dm.PublishError) as err:
        replace_file(path, b"x")
    assert str(err.value).startswith(f"write file: {path}: not a regular file")
    assert err.value.path == str(path)


@pytest.mark.usefixtures("narrow_umask")
def test_make_dirs_makes_every_missing_directory_0755(tmp_path: Path) -> None:
    """Each directory make_dirs creates is 0755 whatever the umask; existing ones keep theirs."""
    tmp_path.chmod(0o711)
    make_dirs(tmp_path / "a" / "b" / "c")
    make_dirs(tmp_path / "a" / "b" / "c")  # all there: nothing to do
    assert [mode_of(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o755] * 3
    assert mode_of(tmp_path) == 0o711


def test_make_dirs_follows_links_above_and_refuses_a_link_below(tmp_path: Path) -> None:
    """A link in the existing part is the caller's and is followed; a dangling one below is not."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "above").symlink_to(real)
    make_dirs(tmp_path / "above" / "made")
    assert (real / "made").is_dir()
    elsewhere = tmp_path / "elsewhere"
    (real / "below").symlink_to(elsewhere)  # dangling: the path looks missing
    with pytest.raises(NotADirectoryError):
        make_dirs(tmp_path / "above" / "below" / "deeper")
    assert not elsewhere.exists()


# --- SafeDir -------------------------------------------------------------------------------


def test_a_missing_root_is_none_or_made_as_asked(tmp_path: Path) -> None:
    """open_root: None for a missing root without create; made (0755) with it."""
    root = tmp_path / "x" / "root"
    assert SafeDir.open_root(str(root), "test", create=False) is None
    with made(SafeDir.open_root(str(root), "test", create=True)) as found:
        assert (found.path, found.names()) == (str(root), [])
    assert mode_of(root) == 0o755


def test_a_root_that_is_not_a_directory_is_a_publish_error(tmp_path: Path) -> None:
    """open_root of a regular file: PublishError ``<what>: <path>: not a directory``."""
    path = tmp_path / "file"
    path.write_bytes(b"")
    with pytest.raises(dm.PublishError, match=rf"^opening: {path}: not a directory$"):
        SafeDir.open_root(str(path), "opening", create=False)


def test_a_link_where_a_directory_belongs_is_refused_or_skipped(tmp_path: Path) -> None:
    """child(): a link is refused (strict) or None (not strict), and nothing is made through it."""
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(target)
    with opened(tmp_path / "root") as root:
        with pytest.raises(dm.PublishError, match="not a directory") as err:
            root.child("link", create=True)
        assert err.value.path == str(tmp_path / "root" / "link")
        assert root.child("link", create=False, strict=False) is None
        assert root.child("missing", create=False) is None
    assert os.listdir(target) == []


@pytest.mark.usefixtures("narrow_umask")
def test_a_child_made_is_0755_and_its_path_is_joined(tmp_path: Path) -> None:
    """child(create=True) makes the directory 0755 and reports the path it was reached by."""
    with opened(tmp_path) as root, made(root.child("made", create=True)) as child:
        assert child.path == str(tmp_path / "made")
    assert mode_of(tmp_path / "made") == 0o755


def test_read_gives_the_bytes_none_when_missing_and_refuses_past_the_limit(
    tmp_path: Path,
) -> None:
    """read(): the file's bytes; None when missing; a file over the readers' limit refused."""
    (tmp_path / "small").write_bytes(b"content")
    with open(tmp_path / "big", "wb") as big:
        big.truncate(DEFAULT_MAX_SIZE + 1)
    with opened(tmp_path) as root:
        assert root.read("small") == b"content"
        assert root.read("missing") is None
        with pytest.raises(dm.PublishError, match="larger than the readers' limit"):
            root.read("big")


def test_unlink_regular_removes_only_a_regular_file_with_one_link(
    tmp_path: Path, victim: Path
) -> None:
    """unlink_regular removes a plain file; a link, a hard link or a directory stays."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "plain").write_bytes(b"")
    (tmp_path / "d" / "symlink").symlink_to(victim)
    os.link(victim, tmp_path / "d" / "hardlink")
    (tmp_path / "d" / "directory").mkdir()
    with opened(tmp_path / "d") as directory:
        removed = {name: directory.unlink_regular(name) for name in directory.names()}
    assert removed == {"directory": False, "hardlink": False, "plain": True, "symlink": False}
    assert victim.read_bytes() == b"secret\n"


def test_remove_temporaries_removes_only_the_temporaries_of_that_name(tmp_path: Path) -> None:
    """``.<name>.<random>.tmp`` files go; other names, and a link of that form, stay."""
    planted = [
        ".metadata.json.1a2b3c4d.tmp",
        ".other.json.1a2b3c4d.tmp",
        "metadata.json",
        ".metadata.json.1a2b3c4d.keep",
    ]
    for name in planted:
        (tmp_path / name).write_bytes(b"half")
    (tmp_path / ".metadata.json.linked.tmp").symlink_to(tmp_path / "metadata.json")
    with opened(tmp_path) as directory:
        directory.remove_temporaries("metadata.json")
    assert sorted(os.listdir(tmp_path)) == sorted([*planted[1:], ".metadata.json.linked.tmp"])


def test_a_locked_replace_uses_one_temporary_name_and_clears_a_killed_ones(
    tmp_path: Path, victim: Path
) -> None:
    """A locked replace writes via ``.<name>.tmp``, first removing (not following) a leftover."""
    (tmp_path / ".state.tmp").symlink_to(victim)
    with opened(tmp_path) as directory:
        directory.replace("state", b"one", locked=True)
        assert sorted(os.listdir(tmp_path)) == ["state", "victim"]
        (tmp_path / ".state.tmp").write_bytes(b"half")
        directory.replace("state", b"two", locked=True)
    assert sorted(os.listdir(tmp_path)) == ["state", "victim"]
    assert (tmp_path / "state").read_bytes() == b"two"
    assert victim.read_bytes() == b"secret\n"


def test_remove_temporary_removes_that_name_only_and_never_a_directory(tmp_path: Path) -> None:
    """remove_temporary("x") removes ``.x.tmp`` (a file or a link) and nothing else, no listing.

    A directory there is refused (InTheWay) with the command that removes it.
    """
    (tmp_path / ".x.tmp").write_bytes(b"half")
    (tmp_path / ".x.1a2b3c4d.tmp").write_bytes(b"half")
    (tmp_path / ".y.tmp").mkdir()
    with opened(tmp_path) as directory:
        directory.remove_temporary("x")
        with pytest.raises(InTheWay, match=r"\.y\.tmp: a directory where .*\(rm -r .*\.y\.tmp\)"):
            directory.remove_temporary("y")
        directory.remove_temporary("missing")
    assert sorted(os.listdir(tmp_path)) == [".x.1a2b3c4d.tmp", ".y.tmp"]


def test_a_name_too_long_is_missing_when_looked_up_and_names_the_temporary_when_written(
    tmp_path: Path,
) -> None:
    """A name over NAME_MAX is missing to lookups; a too long temporary is named in the error."""
    with opened(tmp_path) as directory:
        assert directory.child("d" * 300, create=False) is None
        assert directory.lstat("f" * 300) is None
        assert directory.read("f" * 300) is None
        name = "n" * 253  # fits; ``.<name>.tmp`` does not
        with pytest.raises(
            dm.PublishError, match=r"file name too long \(its temporary file .*/\.n+\.tmp\)$"
        ) as err:
            directory.replace(name, b"x", locked=True)
    assert err.value.path == str(tmp_path / name)
    assert os.listdir(tmp_path) == []


def test_read_refuses_past_a_smaller_limit(tmp_path: Path) -> None:
    """read(limit=...) refuses a file over that limit, naming it."""
    (tmp_path / "f").write_bytes(b"x" * 11)
    with opened(tmp_path) as directory:
        assert directory.read("f", limit=11) == b"x" * 11
        with pytest.raises(dm.PublishError, match=r"/f: larger than the limit of 10 bytes"):
            directory.read("f", limit=10)


def test_remove_self_removes_the_directory_it_opened_and_nothing_else(tmp_path: Path) -> None:
    """remove_self removes the empty directory; one moved away, or not empty, stays."""
    with opened(tmp_path) as root:
        with made(root.child("gone", create=True)) as gone:
            gone.remove_self()
        assert root.names() == []
        with made(root.child("moved", create=True)) as moved:
            os.rename(tmp_path / "moved", tmp_path / "elsewhere")
            (tmp_path / "moved").mkdir()  # a new directory where it was
            moved.remove_self()
        assert root.names() == ["elsewhere", "moved"]
        with made(root.child("full", create=True)) as full:
            (tmp_path / "full" / "file").write_bytes(b"")
            full.remove_self()
        assert root.names() == ["elsewhere", "full", "moved"]


def test_a_swapped_directory_keeps_writes_in_the_one_opened(tmp_path: Path) -> None:
    """A directory replaced by a link after it was opened: the write lands in the opened one."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "root").mkdir()
    with opened(tmp_path / "root") as root, made(root.child("req", create=True)) as req:
        os.rename(tmp_path / "root" / "req", tmp_path / "moved")
        (tmp_path / "root" / "req").symlink_to(outside)
        req.replace("metadata.json", b"data")
        req.rewrite("other.json", b"data")
    assert os.listdir(outside) == []
    assert sorted(os.listdir(tmp_path / "moved")) == ["metadata.json", "other.json"]
