"""Hostile files for the read API and the one-shot commands ``show``, ``validate``, ``lint``.

Real files, real FIFOs and device nodes, real symbolic links, the real command
line in a subprocess: deep nesting as deep as Go allows, links and special files
below the root, wrong argument types.
"""

from __future__ import annotations

import json
import json.scanner
import os
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest

import dra_metadata as dm
from tests.conftest import REPO, peak_kib, run_cli

DRIVER = "x.io"


#: ``python -m dra_metadata ARGS`` from the checkout, with time for the deepest files.
run = partial(run_cli, timeout=120)


def metadata(fields_v1: str | None = None) -> dm.DeviceMetadata:
    """A claim ``c`` with request ``r`` and one device, with a managed-fields entry if asked."""
    managed: tuple[dm.ManagedFieldsEntry, ...] = ()
    if fields_v1 is not None:
        managed = (
            dm.ManagedFieldsEntry(
                manager="m",
                operation="Apply",
                api_version="v1",
                fields_type="FieldsV1",
                fields_v1="{}",
            ),
        )
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(
            name="c", namespace="n", uid="u", generation=1, managed_fields=managed
        ),
        requests=(dm.DeviceMetadataRequest("r", (dm.Device(DRIVER, "p", "d"),)),),
    )


def write_claim(root: Path, data: bytes, claim: str = "c", request: str = "r") -> Path:
    """``data`` as the x.io file of ``claim``/``request`` under ``root``; its path."""
    directory = root / "resourceclaims" / claim / request
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{DRIVER}-metadata.json"
    path.write_bytes(data)
    return path


def deep_fields(depth: int) -> bytes:
    """A compact ``fieldsV1`` value nested ``depth`` objects deep."""
    return b'{"f:a":' * depth + b"{}" + b"}" * depth


def deep_file(root: Path, depth: int) -> Path:
    """A Go-written file whose ``fieldsV1`` is nested ``depth`` levels (compact, as Go keeps it)."""
    data = dm.encode(metadata("{}")).replace(
        b'"fieldsV1": {}', b'"fieldsV1": ' + deep_fields(depth)
    )
    return write_claim(root, data)


def loads_deep(text: str, depth: int) -> Any:
    """``json.loads`` for text nested ``depth`` levels, on every Python.

    The C scanner's recursion is bounded by the interpreter's C stack guard from
    3.12 on, which ``sys.setrecursionlimit`` does not raise; the standard
    library's pure-Python scanner is bounded by the recursion limit alone.
    """
    decoder = json.JSONDecoder()
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(4 * depth + 1000)
    try:
        return decoder.decode(text)
    finally:
        sys.setrecursionlimit(limit)


def fields_depth(value: object) -> int:
    """How many ``f:a`` levels a parsed ``fieldsV1`` has."""
    depth = 0
    while isinstance(value, dict) and value:
        value = value["f:a"]
        depth += 1
    return depth


# --- A: deep fieldsV1 -------------------------------------------------------------------


@pytest.mark.parametrize("depth", [990, 3000, 9994])
def test_show_driver_writes_fields_v1_as_deep_as_go_accepts(tmp_path: Path, depth: int) -> None:
    """``show --driver`` prints a fieldsV1 nested up to Go's limit, complete and parseable."""
    deep_file(tmp_path, depth)
    done = run("--root", str(tmp_path), "show", "--claim", "c", "--driver", DRIVER)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    shown = loads_deep(done.stdout, depth)
    assert fields_depth(shown["metadata"]["managedFields"][0]["fieldsV1"]) == depth
    assert shown["requests"] == [
        {"name": "r", "devices": [{"driver": DRIVER, "pool": "p", "name": "d"}]}
    ]


def test_show_driver_output_for_shallow_fields_v1_is_unchanged(tmp_path: Path) -> None:
    """For a fieldsV1 Python can hold, the text is exactly ``json.dumps(to_dict(), indent=2)``."""
    raw = '{"f:a":{"k:{\\"x\\":1}":{}},"f:b":[1,2.5,"<é>",true,null],"f:a":{"f:c":{}}}'
    data = dm.encode(metadata("{}")).replace(b'"fieldsV1": {}', b'"fieldsV1": ' + raw.encode())
    write_claim(tmp_path, data)
    done = run("--root", str(tmp_path), "show", "--claim", "c", "--driver", DRIVER)
    assert done.returncode == 0, done.stderr
    md = dm.read_resource_claim("c", "r", driver=DRIVER, root=tmp_path)
    assert done.stdout == json.dumps(md.to_dict(), indent=2, ensure_ascii=False) + "\n"


def test_deep_fields_v1_over_go_limit_is_one_line_exit_65(tmp_path: Path) -> None:
    """A fieldsV1 past Go's 10000 levels is Go's one-line depth error and exit 65 everywhere."""
    path = deep_file(tmp_path, 9996)
    for args in (
        ("show", "--claim", "c", "--driver", DRIVER),
        ("show", "--claim", "c"),
        ("validate", str(path)),
        ("lint", str(path)),
    ):
        done = run("--root", str(tmp_path), *args)
        assert done.returncode == 65, (args, done.stderr)
        assert done.stderr.count("\n") == 1, args
        assert "exceeded max depth" in done.stderr, args
        assert done.stdout == ""


def test_deep_fields_v1_validate_lint_and_merged_show_succeed(tmp_path: Path) -> None:
    """validate, lint and show without --driver read a 9994-level fieldsV1 without a traceback."""
    path = deep_file(tmp_path, 9994)
    for args in (("show", "--claim", "c"), ("validate", str(path)), ("lint", str(path))):
        done = run("--root", str(tmp_path), *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_read_api_on_deep_fields_v1_raises_no_recursion_error(tmp_path: Path) -> None:
    """The readers return the raw fieldsV1 text; to_dict() says it is too deep as a DecodeError."""
    path = deep_file(tmp_path, 9994)
    for md in (
        dm.read_file(path),
        dm.read_resource_claim("c", "r", driver=DRIVER, root=tmp_path),
        dm.decode(path.read_bytes()),
    ):
        assert md.metadata.managed_fields[0].fields_v1 == deep_fields(9994).decode()
        with pytest.raises(dm.DecodeError, match="nested too deeply"):
            md.to_dict()
    merged = dm.read_resource_claim("c", "r", root=tmp_path)
    assert merged.to_dict()["requests"] == [
        {"name": "r", "devices": [{"driver": DRIVER, "pool": "p", "name": "d"}]}
    ]


def test_show_driver_writes_a_number_python_cannot_hold(tmp_path: Path) -> None:
    """A fieldsV1 number beyond a float (Go keeps it raw) is shown as written, not a traceback."""
    raw = b'{"f:a":1e400,"f:b":[1.5E3]}'
    write_claim(
        tmp_path, dm.encode(metadata("{}")).replace(b'"fieldsV1": {}', b'"fieldsV1": ' + raw)
    )
    done = run("--root", str(tmp_path), "show", "--claim", "c", "--driver", DRIVER)
    assert done.returncode == 0, done.stderr
    assert '"f:a": 1e400,' in done.stdout
    assert '"f:b": [\n            1500.0\n          ]' in done.stdout


def test_lint_finds_an_unknown_key_whatever_its_value_nests(tmp_path: Path) -> None:
    """An unknown key whose value nests 990 or 9994 levels is reported like a shallow one."""
    for depth in (900, 990, 9994):
        nested = b"[" * depth + b"]" * depth
        data = dm.encode(metadata()).replace(b'"name": "d"', b'"name": "d", "zz": ' + nested)
        path = write_claim(tmp_path / str(depth), data)
        done = run("lint", str(path))
        assert done.returncode == 1, done.stderr
        assert 'DRA114 requests[0].devices[0].zz: unknown field "zz"' in done.stdout


# --- B: symbolic links ------------------------------------------------------------------


def good_bytes() -> bytes:
    """A valid stream of claim ``c``."""
    return dm.encode(metadata())


def elsewhere(tmp_path: Path) -> Path:
    """A valid metadata file outside every root, for links to point at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / f"{DRIVER}-metadata.json"
    target.write_bytes(good_bytes())
    return target


@pytest.mark.parametrize("where", ["claim", "request", "file"])
def test_show_refuses_a_link_below_the_root(tmp_path: Path, where: str) -> None:
    """show follows no link where a claim, request or metadata file should be."""
    target = elsewhere(tmp_path)
    root = tmp_path / "root"
    claims = root / "resourceclaims"
    if where == "claim":
        claims.mkdir(parents=True)
        (claims / "c").symlink_to(target.parent.parent.parent)
        write_claim(tmp_path / "x", good_bytes())  # x/resourceclaims/c/r: what the link points at
        (claims / "c").unlink()
        (claims / "c").symlink_to(tmp_path / "x" / "resourceclaims" / "c")
    elif where == "request":
        (claims / "c").mkdir(parents=True)
        (claims / "c" / "r").symlink_to(target.parent)
    else:
        (claims / "c" / "r").mkdir(parents=True)
        (claims / "c" / "r" / f"{DRIVER}-metadata.json").symlink_to(target)
    done = run("--root", str(root), "show", "--claim", "c", "--request", "r")
    assert done.returncode != 0
    assert "symbolic link" in done.stderr
    assert done.stdout == ""
    with pytest.raises(dm.SymlinkError):
        dm.read_resource_claim("c", "r", root=root)


def test_read_request_dir_refuses_a_linked_file_in_it(tmp_path: Path) -> None:
    """read_request_dir opens the files it finds without following a link."""
    target = elsewhere(tmp_path)
    directory = tmp_path / "req"
    directory.mkdir()
    (directory / f"{DRIVER}-metadata.json").symlink_to(target)
    with pytest.raises(dm.SymlinkError, match="links below the metadata root are not followed"):
        dm.read_request_dir(directory)


def test_read_request_dir_itself_may_be_a_link(tmp_path: Path) -> None:
    """The directory a caller names may be a link: only what is found in it is not followed."""
    target = elsewhere(tmp_path)
    (tmp_path / "req").symlink_to(target.parent)
    md = dm.read_request_dir(tmp_path / "req")
    assert [s.driver for s in md.sources] == [DRIVER]


def test_an_explicit_file_argument_may_be_a_link(tmp_path: Path) -> None:
    """read_file, validate and lint follow a link the user named: the user chose it."""
    target = elsewhere(tmp_path)
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / f"{DRIVER}-metadata.json"
    link.symlink_to(target)
    assert dm.read_file(link).metadata.name == "c"
    assert run("validate", str(link)).returncode == 0
    assert run("lint", str(link)).stdout.endswith("no problems\n")


def test_read_file_of_a_directory_fails_like_go(tmp_path: Path) -> None:
    """A directory named as a file is Go's empty-stream DecodeError, for read_file and validate."""
    directory = tmp_path / f"{DRIVER}-metadata.json"
    directory.mkdir()
    with pytest.raises(dm.DecodeError, match=r"no metadata objects found in stream \(it is a"):
        dm.read_file(directory)
    sub = tmp_path / "req"
    (sub / f"{DRIVER}-metadata.json").mkdir(parents=True)
    with pytest.raises(dm.DecodeError, match="no metadata objects found in stream"):
        dm.read_request_dir(sub)


def test_read_found_refuses_a_link(tmp_path: Path) -> None:
    """A file found by a walk is opened without following a link, a named one with."""
    from dra_metadata._read import read_bytes, read_found

    target = elsewhere(tmp_path)
    (tmp_path / "d").mkdir()
    link = tmp_path / "d" / f"{DRIVER}-metadata.json"
    link.symlink_to(target)
    with pytest.raises(dm.SymlinkError):
        read_found(str(link))
    assert read_bytes(str(link)) == target.read_bytes()


_SWAPPER = """
import os, sys
path, regular, link, bad, good = sys.argv[1:]
while True:
    os.replace(link, path)  # the metadata file is a link to a file that does not validate
    os.symlink(bad, link)
    os.replace(regular, path)  # and a regular, valid file again
    with open(regular, "wb") as out:
        out.write(good.encode())
"""

_VALIDATE_LOOP = """
import sys
from dra_metadata._cli import main
for _ in range(int(sys.argv[2])):
    main(["validate", sys.argv[1]])
"""


def test_validate_of_a_directory_never_follows_a_link_swapped_in(tmp_path: Path) -> None:
    """While a real process swaps a link and a file in turn, validate DIR never reads the link.

    Before found files were opened with O_NOFOLLOW, about 1 run in 250 read the link.
    """
    bad = tmp_path / "outside" / "bad-metadata.json"
    bad.parent.mkdir()
    bad.write_bytes(dm.encode(dm.DeviceMetadata(pod_claim_name="NOT_A_NAME")))
    path = write_claim(tmp_path / "root", good_bytes())
    regular = path.parent / ".regular"
    regular.write_bytes(good_bytes())
    link = path.parent / ".link"
    link.symlink_to(bad)
    swapper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _SWAPPER,
            str(path),
            str(regular),
            str(link),
            str(bad),
            good_bytes().decode(),
        ]
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", _VALIDATE_LOOP, str(tmp_path / "root"), "2500"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
        )
    finally:
        swapper.kill()
        swapper.wait()
    lines = (done.stdout + done.stderr).splitlines()
    assert any("valid (" in line for line in lines)  # the walk did read the regular file
    followed = sum("podClaimName" in line for line in lines)  # the link's target was read
    assert followed == 0, f"{followed} of 2500 runs followed the link"


# --- C: FIFOs and devices are never opened ------------------------------------------------


class BlockedWriter:
    """A real process blocked in ``open(fifo, O_WRONLY)``: it returns only once a reader opens."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        code = "import os, sys; os.open(sys.argv[1], os.O_WRONLY); print('opened', flush=True)"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(fifo)], stdout=subprocess.PIPE, text=True
        )

    def was_opened(self) -> bool:
        """Whether some reader opened the FIFO since the writer started (the writer got through)."""
        try:
            self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        """End the writer (it is ours), reaping it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


@pytest.fixture
def fifo_claim(tmp_path: Path) -> tuple[Path, Path]:
    """A root whose claim ``c`` request ``r`` has a FIFO as its metadata file; (root, fifo)."""
    directory = tmp_path / "root" / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    fifo = directory / f"{DRIVER}-metadata.json"
    os.mkfifo(fifo)
    return tmp_path / "root", fifo


def test_fifo_is_refused_without_being_opened_by_readers(fifo_claim: tuple[Path, Path]) -> None:
    """read_file, read_bytes-based validate/lint and read_request_dir never open a FIFO."""
    _root, fifo = fifo_claim
    writer = BlockedWriter(fifo)
    try:
        with pytest.raises(dm.DRAMetadataError, match="not a regular file"):
            dm.read_file(fifo)
        with pytest.raises(dm.DRAMetadataError, match="not a regular file"):
            dm.read_request_dir(fifo.parent)
        for command in ("validate", "lint"):
            done = run(command, str(fifo))
            assert done.returncode == 66, done.stderr
            assert "not a regular file" in done.stderr
        assert not writer.was_opened()
    finally:
        writer.close()


def test_fifo_is_refused_without_being_opened_by_the_walk(fifo_claim: tuple[Path, Path]) -> None:
    """show, ls and read_resource_claim refuse a FIFO below the root without opening it."""
    root, fifo = fifo_claim
    writer = BlockedWriter(fifo)
    try:
        with pytest.raises(dm.DRAMetadataError, match="not a regular file"):
            dm.read_resource_claim("c", "r", root=root)
        done = run("--root", str(root), "show", "--claim", "c", "--request", "r")
        assert done.returncode == 66, done.stderr
        assert "not a regular file" in done.stderr
        assert not writer.was_opened()
    finally:
        writer.close()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")


@needs_root
def test_device_node_is_refused_without_being_opened(tmp_path: Path) -> None:
    """A character device is refused by its type, not by what opening it does.

    The device number (240, 0) is in the range Linux leaves unassigned: opening
    it fails with ENXIO (or EACCES on a nodev mount), so a reader that opened it
    would say so instead of "not a regular file".
    """
    path = write_claim(tmp_path, b"")
    path.unlink()
    os.mknod(path, 0o644 | 0o020000, os.makedev(240, 0))
    calls: list[Callable[[], object]] = [
        lambda: dm.read_file(path),
        lambda: dm.read_request_dir(path.parent),
    ]
    for call in calls:
        with pytest.raises(dm.DRAMetadataError) as caught:
            call()
        assert str(caught.value) == f"{path}: not a regular file"
    done = run("validate", str(path))
    assert done.stderr == f"dra-metadata: {path}: not a regular file\n"


@needs_root
def test_dev_zero_style_device_is_refused(tmp_path: Path) -> None:
    """A copy of /dev/zero (1, 5) named like a metadata file is refused, not read forever."""
    path = write_claim(tmp_path, b"")
    path.unlink()
    os.mknod(path, 0o644 | 0o020000, os.makedev(1, 5))
    with pytest.raises(dm.DRAMetadataError, match="not a regular file"):
        dm.read_file(path)
    assert run("lint", str(path)).returncode == 66


# --- D: argument types --------------------------------------------------------------------


def test_bytes_paths_are_a_clear_type_error(tmp_path: Path) -> None:
    """A bytes root or path is a TypeError with our message, for every reader and lint."""
    path = write_claim(tmp_path, good_bytes())
    root: Any = os.fsencode(tmp_path)
    file: Any = os.fsencode(path)
    directory: Any = os.fsencode(path.parent)
    calls: dict[str, list[Callable[[], object]]] = {
        "root": [
            lambda: dm.read_resource_claim("c", "r", root=root),
            lambda: dm.read_resource_claim_template("c", "r", root=root),
        ],
        "path": [lambda: dm.read_file(file), lambda: dm.lint(good_bytes(), path=file)],
        "directory": [lambda: dm.read_request_dir(directory)],
    }
    for what, each in calls.items():
        for call in each:
            with pytest.raises(TypeError, match=f"^{what} must be a str or os.PathLike"):
                call()


def test_max_size_none_is_a_clear_type_error(tmp_path: Path) -> None:
    """max_size=None is refused with a message saying every read is bounded."""
    path = write_claim(tmp_path, good_bytes())
    none: Any = None
    calls: list[Callable[[], object]] = [
        lambda: dm.read_file(path, max_size=none),
        lambda: dm.read_request_dir(path.parent, max_size=none),
        lambda: dm.read_resource_claim("c", "r", root=tmp_path, max_size=none),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=r"max_size must be an int .*no unlimited read"):
            call()
    with pytest.raises(ValueError, match="must not be negative"):
        dm.read_file(path, max_size=-1)


def test_lint_refuses_what_is_not_bytes_or_str() -> None:
    """lint(5) is a TypeError, not five NUL bytes linted."""
    five: Any = 5
    with pytest.raises(TypeError, match="lint\\(\\) takes bytes or str, not int"):
        dm.lint(five)


# --- E: the memory of one big file ------------------------------------------------------


def big_stream(devices: int) -> bytes:
    """A compact two-entry stream of one request with ``devices`` devices."""
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="big", namespace="ns", uid="u", generation=1),
        requests=(
            dm.DeviceMetadataRequest(
                "gpu", tuple(dm.Device("x.io", "p", f"d{i}") for i in range(devices))
            ),
        ),
    )
    return (
        b"\n".join(
            msgspec.json.format(dm.encode(md, [v]), indent=0).strip()
            for v in (dm.V1BETA1, dm.V1ALPHA1)
        )
        + b"\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ("lint", "{file}"),
        ("validate", "{file}"),
        ("--root", "{root}", "show", "--claim", "big", "--request", "gpu", "--driver", "x.io"),
        ("--root", "{root}", "show", "--claim", "big", "--request", "gpu"),
    ],
    ids=lambda c: " ".join(part for part in c if not part.startswith("{")),
)
def test_one_big_file_costs_at_most_eight_times_its_size(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """lint, validate and show peak below 8x a dense 6 MiB file's size over a one-device file."""
    sizes = {}
    for name, devices in (("small", 1), ("big", 60000)):
        root = tmp_path / name
        directory = root / "resourceclaims" / "big" / "gpu"
        directory.mkdir(parents=True)
        file = directory / "x.io-metadata.json"
        file.write_bytes(big_stream(devices))
        args = [part.format(file=file, root=root) for part in command]
        sizes[name] = (file.stat().st_size, peak_kib(*args) * 1024)
    (big_size, big_peak), (_small_size, small_peak) = sizes["big"], sizes["small"]
    assert big_size > 5 * 2**20
    assert big_peak - small_peak <= 8 * big_size, (big_peak - small_peak) / big_size
