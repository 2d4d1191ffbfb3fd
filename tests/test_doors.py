"""Every door gives one answer: the same question asked through each door, answers compared.

The questions (rows) are asked of the sample trees through every door (columns):
the Python readers, ``inventory()`` and its ``request()``/``devices()``,
``env_vars()``, ``wait_for()``, ``watch()``, and each command run as a real
process (``python -m dra_metadata``). The answers compared are the exit code,
the message (the reader's words, byte for byte) and the devices.

``wait`` and ``watch`` on a plain directory tree wait for what is not there yet
(a file may still be written); there they answer a missing claim or an empty
root with a timeout that carries the same explanation. A subrequest that was
not allocated cannot appear later: they fail at once like every other door.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import msgspec
import msgspec.structs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._nearby import nothing_mounted_text
from dra_metadata._select import Place, ask, resolve
from dra_metadata.testing import MetadataTree
from tests.conftest import NO_ROOT, REPO, SAMPLE_ROOT, run_cli, run_cli_bytes
from tests.exploration import examples

ROOT = str(SAMPLE_ROOT.relative_to(REPO))
TOPOLOGY_ROOT = "examples/topology-tree"
#: The sample tree's template claim ``inference`` was allocated ``gpu/high-memory``.
ALLOCATED = "gpu/high-memory"


#: ``python -m dra_metadata ARGS`` from the checkout, as a user runs it (no root set).
cli = partial(run_cli, env=NO_ROOT)


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one error line a command wrote, without the program prefix."""
    lines = [line for line in done.stderr.splitlines() if not line.startswith("note: ")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("dra-metadata: ")
    return lines[0].removeprefix("dra-metadata: ")


def reader_error(root: str, template: bool, claim: str, request: str) -> dm.MetadataNotFoundError:
    """What the reader raises for the question: the words every door must give."""
    read = dm.read_resource_claim_template if template else dm.read_resource_claim
    with pytest.raises(dm.MetadataNotFoundError) as err:
        read(claim, request, root=root)
    return err.value


# Python doors: each asks "template claim C, request R" under a root.
PythonDoor = Callable[[str, str, str], object]


def _wait_for(root: str, claim: str, request: str) -> object:
    return dm.wait_for(pod_claim=claim, request=request, root=root, timeout=0)


def _watch(root: str, claim: str, request: str) -> object:
    return list(dm.watch(pod_claim=claim, request=request, root=root, timeout=0))


PYTHON_DOORS: dict[str, PythonDoor] = {
    "read_resource_claim_template": lambda root, claim, request: dm.read_resource_claim_template(
        claim, request, root=root
    ),
    "inventory().request": lambda root, claim, request: dm.inventory(root).request(
        claim, request, claim_kind="template"
    ),
    "inventory().devices": lambda root, claim, request: dm.inventory(root).devices(
        claim_kind="template", claim=claim, request=request
    ),
    "env_vars": lambda root, claim, request: dm.env_vars(
        root=root, pod_claim=claim, request=request
    ),
    "wait_for": _wait_for,
    "watch": _watch,
}

#: Each command, with what it needs after the selection.
COMMANDS: dict[str, tuple[str, ...]] = {
    "show": (),
    "ls": (),
    "get": ("uuid",),
    "env": (),
    "topology": (),
    "watch": ("--timeout", "0"),
    "wait": ("--timeout", "0"),
}
#: Commands that print something on stdout even when nothing answers (ls: its header).
HEADER_ON_FAILURE = {"ls"}


# --------------------------------------------------------------- a subrequest not allocated


@pytest.mark.parametrize("door", PYTHON_DOORS)
def test_a_subrequest_not_allocated_is_the_same_not_found_through_every_python_door(
    door: str,
) -> None:
    """gpu/low-memory when gpu/high-memory was allocated: one error, the same words."""
    expected = reader_error(ROOT, True, "inference", "gpu/low-memory")
    assert ALLOCATED in str(expected)
    assert expected.nearby == (ALLOCATED,)
    with pytest.raises(dm.MetadataNotFoundError) as err:
        PYTHON_DOORS[door](ROOT, "inference", "gpu/low-memory")
    assert (str(err.value), err.value.nearby) == (str(expected), expected.nearby)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_subrequest_not_allocated_is_exit_66_and_the_same_words_through_every_command(
    command: str,
) -> None:
    """Every command: exit 66, one line, the reader's words; wait and watch at once."""
    expected = str(reader_error(ROOT, True, "inference", "gpu/low-memory"))
    done = cli(
        command,
        "--root",
        ROOT,
        "--template-claim",
        "inference",
        "--request",
        "gpu/low-memory",
        *COMMANDS[command],
    )
    assert done.returncode == 66
    assert error_line(done) == expected
    if command not in HEADER_ON_FAILURE:
        assert done.stdout == ""


def test_wait_on_a_subrequest_not_allocated_fails_at_once_without_a_timeout() -> None:
    """wait with no --timeout (for ever) still fails at once: the allocation cannot change."""
    done = cli("wait", "--root", ROOT, "--template-claim", "inference", "--request", "gpu/x")
    assert done.returncode == 66
    assert "was allocated as gpu/high-memory" in error_line(done)


# --------------------------------------------------------------- the request without subrequest


def test_the_base_request_answers_what_was_allocated_and_says_which_through_every_door() -> None:
    """Asking for gpu: the high-memory GPU, named gpu/high-memory, through every door."""
    md = dm.read_resource_claim_template("inference", "gpu", root=ROOT)
    assert [r.name for r in md.requests] == [ALLOCATED]
    (device,) = md.requests[0].devices
    uuid = device.attribute("uuid")
    inv = dm.inventory(ROOT)
    assert inv.request("inference", "gpu", claim_kind="template").subrequest == ALLOCATED
    found = inv.devices(claim_kind="template", claim="inference", request="gpu")
    assert [(d.name, d.request) for d in found] == [(device.name, ALLOCATED)]
    env = dm.env_vars(root=ROOT, pod_claim="inference", request="gpu")
    assert env["DRA_INFERENCE_GPU_REQUEST"] == ALLOCATED
    assert env["DRA_INFERENCE_GPU_DEVICES"] == device.name
    waited = dm.wait_for(pod_claim="inference", request="gpu", root=ROOT, timeout=5)
    assert [r.name for r in waited.requests] == [ALLOCATED]
    (event,) = dm.watch(pod_claim="inference", request="gpu", root=ROOT, timeout=0)
    assert event.merged is not None
    assert [r.name for r in event.merged.requests] == [ALLOCATED]

    select = ("--root", ROOT, "--template-claim", "inference", "--request", "gpu")
    show = cli("show", *select)
    assert show.returncode == 0
    assert [r["name"] for r in json.loads(show.stdout)["requests"]] == [ALLOCATED]
    get = cli("get", *select, "uuid")
    assert (get.returncode, get.stdout) == (0, f"{uuid}\n")
    assert f"note: request 'gpu' was allocated as {ALLOCATED}" in get.stderr
    ls = json.loads(cli("ls", *select, "--json").stdout)
    assert [row["requests"] for row in ls] == [[ALLOCATED]]
    shell = cli("env", *select)
    assert f"export DRA_INFERENCE_GPU_REQUEST={ALLOCATED}\n" in shell.stdout
    topology = json.loads(cli("topology", *select, "--json").stdout)
    assert [(d["name"], d["request"]) for d in topology["devices"]] == [(device.name, ALLOCATED)]
    watch = cli("watch", *select, "--timeout", "0")
    (line,) = watch.stdout.splitlines()
    assert [r["name"] for r in json.loads(line)["metadata"]["requests"]] == [ALLOCATED]
    assert cli("wait", *select, "--timeout", "5").returncode == 0
    # The exact subrequest answers the same.
    exact = cli("get", "--root", ROOT, "--template-claim", "inference", "--request", ALLOCATED,
                "uuid")  # fmt: skip
    assert (exact.returncode, exact.stdout) == (0, get.stdout)


# --------------------------------------------------------------- a missing claim


@pytest.mark.parametrize("door", ["read_resource_claim_template", "inventory().request",
                                  "inventory().devices", "env_vars"])  # fmt: skip
def test_a_missing_claim_is_the_readers_not_found_through_every_python_door(door: str) -> None:
    """A template claim that is not there: the reader's error, never None or []."""
    expected = reader_error(ROOT, True, "nope", "gpu")
    assert "template claims here" in str(expected)
    with pytest.raises(dm.MetadataNotFoundError) as err:
        PYTHON_DOORS[door](ROOT, "nope", "gpu")
    assert (str(err.value), err.value.nearby) == (str(expected), expected.nearby)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_claim_gives_the_same_words_through_every_command(command: str) -> None:
    """Exit 66 and the reader's line; wait and watch on a plain tree say it while waiting."""
    expected = str(reader_error(ROOT, True, "nope", "gpu"))
    select = ("--root", ROOT, "--template-claim", "nope", "--request", "gpu")
    done = cli(command, *select, *COMMANDS[command])
    explanation = expected.partition(": ")[2]
    if command == "wait":  # a plain tree: it may still appear; the timeout says what is there
        assert done.returncode == 1
        assert explanation in error_line(done)
    elif command == "watch":
        assert done.returncode == 0
        assert explanation in done.stderr
    else:
        assert done.returncode == 66
        assert error_line(done) == expected


# --------------------------------------------------------------- an empty root


ALL_COMMANDS = ("show", "ls", "get", "env", "topology", "doctor", "validate", "lint")


@pytest.mark.parametrize("command", ALL_COMMANDS)
def test_an_empty_root_is_one_wording_and_exit_66_for_every_command(
    command: str, tmp_path: Path
) -> None:
    """Every command says "nothing is mounted under ROOT; <the fix>" on stderr and exits 66."""
    (tmp_path / "resourceclaims").mkdir()
    args = ["--root", str(tmp_path)]
    if command in ("show", "get"):
        args += ["--claim", "c", "--request", "r"]
    if command == "get":
        args.append("uuid")
    done = cli(command, *args)
    assert done.returncode == 66
    assert error_line(done).endswith(nothing_mounted_text(str(tmp_path)))
    if command not in HEADER_ON_FAILURE:
        assert done.stdout == ""  # env's stdout stays sourceable: nothing at all


def test_an_empty_root_is_the_same_not_found_from_python(tmp_path: Path) -> None:
    """The readers and env_vars() say it in the same words; inventory() describes it."""
    text = nothing_mounted_text(str(tmp_path))
    for call in (
        lambda: dm.read_resource_claim("c", "r", root=tmp_path),
        lambda: dm.env_vars(root=tmp_path),
        lambda: dm.inventory(tmp_path).request("c", "r"),
        lambda: dm.check_live(tmp_path),
    ):
        with pytest.raises(dm.MetadataNotFoundError) as err:
            call()
        assert str(err.value).endswith(text)
    inv = dm.inventory(tmp_path)  # never raises: an overview, empty
    assert (inv.exists, inv.requests) == (True, ())


@pytest.mark.parametrize("command", ["ls", "env", "topology", "doctor", "validate"])
def test_a_root_that_is_a_file_is_said_to_be_one(command: str) -> None:
    """ls --root README.md: not "does not exist", but what it is."""
    done = cli(command, "--root", "README.md")
    assert done.returncode == 66
    line = error_line(done)
    assert "README.md is a regular file, not a directory" in line
    assert "does not exist" not in line


# --------------------------------------------------------------- parameters and options


def test_claim_kind_and_device_kind_have_different_names() -> None:
    """Inventory.devices(claim_kind=) is the claim's kind; Topology.nearest(kind=) a device's."""
    inv = dm.inventory(TOPOLOGY_ROOT)
    with pytest.raises(ValueError, match="claim_kind must be 'claim'"):
        inv.devices(claim_kind="gpu")  # type: ignore[arg-type]  # the mistake under test
    topo = inv.topology()
    gpu = topo.find("gpu0")
    assert topo.nearest(gpu, kind="nic")


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["sho"], "'show'"),
        (["show", "--clam", "x", "--request", "r"], "'--claim'"),
        (["show", "--claim", "x", "--reqest", "r"], "'--request'"),
        (["show", "--claim", "x", "--req", "r"], "'--request'"),
        (["env", "--profile", "cudaa"], "'cuda'"),
        (["ls", "--fromat", "json"], "'--format'"),
    ],
)
def test_unknown_options_and_commands_get_a_did_you_mean(args: list[str], suggestion: str) -> None:
    """Misspelt options and commands are usage errors naming the closest one; no abbreviations."""
    done = cli(*args, "--root", ROOT) if args[0] != "sho" else cli(*args)
    assert done.returncode == 64
    assert f"did you mean {suggestion}?" in done.stderr.splitlines()[-1]
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("command", "timeout"),
    [("wait", "1m30s"), ("wait", "1h"), ("wait", "1.5"), ("watch", "500ms"), ("watch", "0.2")],
)
def test_every_duration_option_takes_gos_form(command: str, timeout: str) -> None:
    """--timeout accepts what Go's time.ParseDuration does, and plain seconds."""
    select = ("--root", ROOT, "--claim", "nic", "--request", "eth")
    done = cli(
        command, *select, "--timeout", timeout, *(["--for", "network"] * (command == "wait"))
    )
    assert done.returncode == 0, done.stderr


def test_validate_and_lint_check_the_mounted_root_without_a_file() -> None:
    """No FILE: every metadata file of --root (or $DRA_METADATA_ROOT), as ls lists them."""
    files = [row["path"] for row in json.loads(cli("ls", "--root", ROOT, "--json").stdout)]
    for command in ("validate", "lint"):
        done = cli(command, "--root", ROOT)
        checked = [line.partition(": ")[0] for line in done.stdout.splitlines()]
        assert sorted(set(checked)) == sorted(files)
        named = cli(command, ROOT)
        assert (done.returncode, done.stdout) == (named.returncode, named.stdout)
        from_env = run_cli(command, env={"DRA_METADATA_ROOT": ROOT})
        assert from_env.stdout == done.stdout


# --------------------------------------------------------------- topology width, show identity


def test_topology_lines_are_whole_unless_stdout_is_a_terminal() -> None:
    """In a pipe (kubectl logs) no line is cut whatever COLUMNS says; on a terminal they are."""
    piped = cli("topology", "--root", TOPOLOGY_ROOT, env={**NO_ROOT, "COLUMNS": "60"})
    assert "…" not in piped.stdout
    assert "GPU-4a1c2e3f-5b6d-4e7f-8091-a2b3c4d5e6f7" in piped.stdout
    leader, follower = pty.openpty()
    try:
        environ = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="60")
        done = subprocess.run(
            [sys.executable, "-m", "dra_metadata", "topology", "--root", TOPOLOGY_ROOT],
            stdout=follower,
            stderr=subprocess.PIPE,
            cwd=REPO,
            env=environ,
            timeout=60,
            check=False,
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the writer is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    text = b"".join(chunks).decode()
    assert done.returncode == 0
    assert "…" in text
    assert all(len(line) <= 60 for line in text.replace("\r", "").splitlines())


def test_show_json_carries_the_claims_identity_and_each_drivers_generation() -> None:
    """show: name, namespace, uid, generations; --format go: Go's merged object exactly."""
    select = ("--root", ROOT, "--claim", "train", "--request", "accel")
    shown = json.loads(cli("show", *select).stdout)
    md = dm.read_resource_claim("train", "accel", root=ROOT)
    assert shown["metadata"] == {
        "name": md.claim_name,
        "namespace": md.claim_namespace,
        "uid": md.claim_uid,
        "generation": 1,
    }
    assert shown["generations"] == md.generations == {"gpu.example.com": 1, "rdma.example.com": 1}
    go = json.loads(cli("show", *select, "--format", "go").stdout)
    assert go == md.to_dict()
    assert go["metadata"] == {}
    assert {k: v for k, v in shown.items() if k not in ("metadata", "generations")} == {
        k: v for k, v in go.items() if k != "metadata"
    }


def test_show_json_says_when_the_files_disagree(dra_metadata_tree: MetadataTree) -> None:
    """Files of two claim UIDs in one request: no identity, a disagreement, and a warning."""
    request = dra_metadata_tree.claim("c", uid="uid-1").request("r")
    request.device("a.example.com", "p", "a0")
    other = MetadataTree(dra_metadata_tree.root)
    other.claim("c", uid="uid-2").request("r").device("b.example.com", "p", "b0")
    dra_metadata_tree.write()
    other.write()
    done = cli("show", "--root", str(dra_metadata_tree.root), "--claim", "c", "--request", "r")
    shown = json.loads(done.stdout)
    assert shown["metadata"] == {}
    assert "claim UID" in shown["disagreement"]
    assert "disagree" in done.stderr


# --------------------------------------------------------------- the resolver, by property

NAMES = st.sampled_from(["gpu", "nic", "a", "b-1"])
SUBS = st.sampled_from(["high", "low", "x"])


@settings(max_examples=examples(200), deadline=None)
@given(
    base=NAMES,
    held=st.lists(SUBS.map(lambda s: s) | st.none(), min_size=0, max_size=3),
    asked=st.none() | SUBS,
)
def test_the_resolver_keeps_exactly_the_names_that_answer(
    base: str, held: list[str | None], asked: str | None
) -> None:
    """R keeps every name (none at all too: a file without request entries answers R, as
    Go's readers answer it); R/S keeps exactly R/S, and raises naming the allocated when
    none."""
    names = tuple(base if sub is None else f"{base}/{sub}" for sub in held)
    request = base if asked is None else f"{base}/{asked}"
    question = ask(kind="claim", claim="c", request=request)
    place = Place("claim", "c", base, "<dir>", names)
    wanted = names if asked is None else tuple(n for n in names if n == request)
    if wanted or asked is None:
        assert resolve(question, "<root>", [place]) == [(0, wanted)]
    else:
        with pytest.raises(dm.MetadataNotFoundError) as err:
            resolve(question, "<root>", [place])
        allocated = {name for name in names if "/" in name} or set(names)
        assert set(err.value.nearby) == allocated
        assert f"subrequest {request!r} was not allocated" in str(err.value)
    # Another claim's directory never answers, whatever it holds: the not-found.
    with pytest.raises(dm.MetadataNotFoundError):
        resolve(question, "<root>", [msgspec.structs.replace(place, claim="other")])


@settings(max_examples=examples(25), deadline=None)
@given(allocated=SUBS, asked=st.none() | SUBS)
def test_every_python_door_answers_a_tree_as_the_reader_does(
    allocated: str, asked: str | None
) -> None:
    """A claim allocated gpu/<allocated>, asked gpu or gpu/<asked>: every door agrees."""
    with tempfile.TemporaryDirectory() as tmp:
        doors_agree(Path(tmp), allocated, asked)


def doors_agree(root: Path, allocated: str, asked: str | None) -> None:
    """Every Python door answers the tree as the reader does."""
    tree = MetadataTree(root)
    tree.claim("c").request(f"gpu/{allocated}").device("g.example.com", "p", "g0", uuid="u")
    tree.write()
    request = "gpu" if asked is None else f"gpu/{asked}"
    answers: dict[str, object] = {}
    doors: dict[str, Callable[[], object]] = {
        "read": lambda: [r.name for r in dm.read_resource_claim("c", request, root=root).requests],
        "request": lambda: list(dm.inventory(root).request("c", request).request_names),
        "devices": lambda: sorted(
            {d.request for d in dm.inventory(root).devices(claim="c", request=request)}
        ),
        "env_vars": lambda: [
            dm.env_vars(root=root, claim="c", request=request)["DRA_C_GPU_REQUEST"]
        ],
        "wait_for": lambda: [
            r.name for r in dm.wait_for(claim="c", request=request, root=root, timeout=5).requests
        ],
    }
    for name, door in doors.items():
        try:
            answers[name] = door()
        except dm.MetadataNotFoundError as err:
            answers[name] = ("not found", str(err))
    assert len({json.dumps(answer) for answer in answers.values()}) == 1, answers
    expected_ok = asked is None or asked == allocated
    assert (answers["read"] == [f"gpu/{allocated}"]) is expected_ok


def test_show_json_keeps_a_driver_name_that_is_not_utf8(tmp_path: Path) -> None:
    """A file name with a byte that is not UTF-8: its generation is shown, no traceback."""
    tree = MetadataTree(tmp_path)
    tree.claim("c").request("r").device("d.example.com", "p", "d0")
    tree.write()
    directory = os.fsencode(tmp_path / "resourceclaims" / "c" / "r")
    os.rename(directory + b"/d.example.com-metadata.json", directory + b"/d\xff-metadata.json")
    done = run_cli_bytes("show", "--root", str(tmp_path), "--claim", "c", "--request", "r")
    assert (done.returncode, done.stderr) == (0, b"")
    assert b'"generations": {\n    "d\xff": 1\n  }\n}\n' in done.stdout


def test_a_file_without_request_entries_answers_its_base_request(tmp_path: Path) -> None:
    """A driver's file in directory R that lists no request: R reads it (as Go does), R/S is
    the not-allocated not-found (found by the Go reference's merge family)."""
    directory = tmp_path / "resourceclaims" / "c" / "gpu"
    directory.mkdir(parents=True)
    (directory / "gpu.example.com-metadata.json").write_text(
        '{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",'
        '"metadata":{"name":"c","uid":"u","generation":3}}\n'
    )
    md = dm.read_resource_claim("c", "gpu", root=tmp_path)
    assert md.requests == ()
    assert md.sources[0].generation == 3
    one = dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=tmp_path)
    assert one.metadata.generation == 3
    with pytest.raises(dm.MetadataNotFoundError, match="subrequest 'gpu/a' was not allocated"):
        dm.read_resource_claim("c", "gpu/a", root=tmp_path)
