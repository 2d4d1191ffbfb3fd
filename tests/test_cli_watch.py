"""``dra-metadata watch`` and ``dra-metadata wait``, run for real in subprocesses."""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import dra_metadata as dm
from dra_metadata._cli import main
from dra_metadata._cli._watch import parse_duration
from dra_metadata.testing import MetadataTree, MountedMetadataTree
from tests.conftest import REPO, SAMPLE_ROOT, nic_tree, run_cli, run_cli_bytes

#: Generous bound for waiting on a condition (a loaded CI machine); never a latency claim.
WAIT = 30.0


#: Wait for network data, at most the generous bound.
FOR_NET = ("--for=network", f"--timeout={WAIT:g}s")


class Lines:
    """A running command whose stdout lines the test takes one by one, with timeouts."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dra_metadata", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def next(self) -> dict[str, Any]:
        """The next JSON line, parsed."""
        try:
            line = self.lines.get(timeout=WAIT)
        except queue.Empty:
            pytest.fail(f"no line within {WAIT:g}s")
        record: dict[str, Any] = json.loads(line)
        return record

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(WAIT)
        self.reader.join(WAIT)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def lines() -> Iterator[Any]:
    """Start commands whose output the test reads line by line; all stopped at teardown."""
    started: list[Lines] = []

    def start(*args: str) -> Lines:
        command = Lines(*args)
        started.append(command)
        return command

    yield start
    for command in started:
        command.stop()


# --- watch ---------------------------------------------------------------------------------


def test_watch_prints_one_json_line_per_event_through_a_mount(
    dra_metadata_mounted_tree: MountedMetadataTree, lines: Any
) -> None:
    """Initial update, an in-place update, a stale rename and a removal, one line each."""
    tree = dra_metadata_mounted_tree
    [vf] = nic_tree(tree, "sriov.example.com")
    watch = lines("watch", "--claim", "nic", "--request", "eth")
    first = watch.next()
    assert list(first) == ["event", "path", "driver", "generation", "metadata"]
    assert (first["event"], first["driver"], first["generation"]) == (
        "update",
        "sriov.example.com",
        1,
    )
    assert first["path"] == str(vf.path)
    assert first["metadata"] == dm.read_file(vf.path).to_dict()
    vf.network(interface_name="net1", ips=["10.0.0.5/24"])
    tree.update(mode="in-place")
    second = watch.next()
    assert (second["event"], second["generation"]) == ("update", 2)
    assert second["metadata"]["requests"][0]["devices"][0]["networkData"] == {
        "interfaceName": "net1",
        "ips": ["10.0.0.5/24"],
    }
    tree.update(vf, mode="rename")
    stale = watch.next()
    assert (stale["event"], stale["generation"]) == ("stale", 2)
    assert "later updates cannot reach this container" in stale["message"]
    assert stale["metadata"] == second["metadata"]
    tree.remove(tree.claim("nic"))
    removed = watch.next()
    while removed["event"] == "error":  # the bare mount point, between unmount and unlink
        removed = watch.next()
    assert (removed["event"], removed["generation"], removed["metadata"]) == ("removed", 2, None)
    assert "message" not in removed


def test_watch_reports_a_file_that_stays_undecodable(
    dra_metadata_tree: MetadataTree, lines: Any
) -> None:
    """A torn file that stays torn gives an error line with a message."""
    [vf] = nic_tree(dra_metadata_tree, "sriov.example.com")
    watch = lines("watch", "--claim", "nic", "--request", "eth")
    assert watch.next()["event"] == "update"
    dra_metadata_tree.tear(vf)
    error = watch.next()
    assert (error["event"], error["generation"], error["metadata"]) == ("error", 1, None)
    assert error["message"].startswith("not decodable for ")


def test_watch_with_a_timeout_ends_by_itself(dra_metadata_tree: MetadataTree) -> None:
    """--timeout ends the watch with exit code 0 after printing the initial state."""
    nic_tree(dra_metadata_tree, "a.example.com", "b.example.com")
    done = run_cli("watch", "--claim", "nic", "--request", "eth", "--timeout", "200ms")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["event"], r["driver"]) for r in records] == [
        ("update", "a.example.com"),
        ("update", "b.example.com"),
    ]


def test_watch_prints_a_file_name_that_is_not_utf8(tmp_path: Any) -> None:
    """A driver file name with non-UTF-8 bytes is printed escaped, as ``ls --json`` prints it."""
    directory = tmp_path / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    md = dm.DeviceMetadata(metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=1))
    with open(os.path.join(os.fsencode(directory), b"\xff-metadata.json"), "wb") as file:
        file.write(dm.encode(md))
    done = run_cli_bytes(
        "watch", "--claim=c", "--request=r", f"--root={tmp_path}", "--timeout=0", timeout=WAIT * 2
    )
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    record = json.loads(line.decode("utf-8"))
    assert (record["event"], record["driver"]) == ("update", "\\xff")


def test_watch_in_process_prints_the_sample_request() -> None:
    """main() runs watch as a function: the sample NIC's one line, generation 2."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "watch",
                "--root",
                str(SAMPLE_ROOT),
                "--claim",
                "nic",
                "--request",
                "eth",
                "--timeout=0",
            ]
        )
    assert code == 0
    [record] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (record["event"], record["generation"]) == ("update", 2)


# --- wait ----------------------------------------------------------------------------------


def test_wait_exits_0_at_once_when_the_condition_holds() -> None:
    """The sample NIC already has network data: exit 0, nothing printed."""
    done = run_cli(
        "wait", "--root", str(SAMPLE_ROOT), "--claim", "nic", "--request", "eth", "--for", "network"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_wait_exits_0_when_network_data_arrives_later(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """An init container's wait: generation 1 first, network data in generation 2, exit 0."""
    tree = dra_metadata_mounted_tree
    [vf] = nic_tree(tree, "sriov.example.com")
    waiter = subprocess.Popen(
        [sys.executable, "-m", "dra_metadata", "wait", "--claim=nic", "--request=eth", *FOR_NET],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        vf.network(interface_name="net1")
        tree.update(mode="in-place")
        _out, err = waiter.communicate(timeout=WAIT * 2)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert waiter.returncode == 0, err


@pytest.mark.parametrize(
    ("setup", "args", "reason"),
    [
        ("none", [], "; last seen: no metadata file (no directory "),
        (
            "gen1",
            ["--for", "network"],
            "; last seen: sriov.example.com-metadata.json generation 1 without network data "
            "(device node-a/vf-0)",
        ),
        ("torn", [], "; last seen: sriov.example.com-metadata.json does not decode: "),
        (
            "gen1",
            ["--generation", "2"],
            "; last seen: sriov.example.com-metadata.json generation 1 (waiting for generation 2)",
        ),
        (
            "gen1",
            ["--attribute", "model"],
            "; last seen: sriov.example.com-metadata.json generation 1 without attribute model "
            "(device node-a/vf-0)",
        ),
        (  # a name close to one the device has: as get says it
            "model",
            ["--attribute", "modle"],
            " without attribute modle (device node-a/vf-0: did you mean 'model'?)",
        ),
        (  # a standard attribute: every name tried, as get says it
            "gen1",
            ["--attribute", "pcieRoot"],
            " without attribute pcieRoot (device node-a/vf-0: looked for "
            "sriov.example.com/pcieRoot, resource.kubernetes.io/pcieRoot",
        ),
        (  # no attribute ever holds network data: say which condition does
            "gen1",
            ["--attribute", "interfaceName"],
            " without attribute interfaceName (device node-a/vf-0: interfaceName is network "
            "data, not an attribute: wait for has_network_data() (--for network))",
        ),
    ],
)
def test_wait_times_out_with_exit_1_and_says_what_it_saw_last(
    setup: str, args: list[str], reason: str, dra_metadata_tree: MetadataTree
) -> None:
    """On timeout: exit 1 and one stderr line naming what was last seen."""
    if setup != "none":
        [vf] = nic_tree(dra_metadata_tree, "sriov.example.com")
        if setup == "torn":
            dra_metadata_tree.tear(vf)
        if setup == "model":
            vf.set(model="x710")
            dra_metadata_tree.update()
    done = run_cli("wait", "--claim", "nic", "--request", "eth", *args, "--timeout", "300ms")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("dra-metadata: timed out after 0.3s waiting for ")
    assert reason in done.stderr


def test_wait_conditions_combine(dra_metadata_tree: MetadataTree) -> None:
    """--generation, --attribute and --for network together: all must hold."""
    [vf] = nic_tree(dra_metadata_tree, "sriov.example.com")
    vf.set(model="x710")
    vf.network(interface_name="net1")
    dra_metadata_tree.update()
    every = ["--for", "network", "--generation", "2", "--attribute", "model"]
    assert run_cli("wait", "--claim", "nic", "--request", "eth", *every).returncode == 0
    more = [*every, "--attribute", "sriov.example.com/vendor", "--timeout", "0"]
    done = run_cli("wait", "--claim", "nic", "--request", "eth", *more)
    assert done.returncode == 1
    assert "without attribute sriov.example.com/vendor" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--claim", "..", "--request", "eth"],
        ["--claim", "nic"],
        ["--claim", "nic", "--request", "eth", "--timeout", "soon"],
        ["--claim", "nic", "--request", "eth", "--timeout", "-1s"],
        ["--claim", "nic", "--request", "eth", "--generation", "0"],
        ["--claim", "nic", "--request", "eth", "--for", "everything"],
    ],
)
def test_wait_usage_errors_exit_64(args: list[str]) -> None:
    """Unsafe names, missing options and bad values are usage errors."""
    assert main(["wait", *args]) == 64


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("500ms", 0.5),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1.5", 1.5),
        ("0", 0.0),
        ("1m30s", 90.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("250us", 0.00025),
        ("2h45m30.5s", 9930.5),
    ],
)
def test_timeouts_accept_units_and_plain_seconds(text: str, seconds: float) -> None:
    """--timeout takes Go's form (1m30s, 500ms, 1h), or plain seconds."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["", "s", "1.2.3s", "inf", "nan", "1e3", "-1", "+2s", "1 d", "1m30", "1d", "m5", "٣s"]
)
def test_timeouts_refuse_anything_else(text: str) -> None:
    """Anything but a plain decimal number with an optional unit is refused."""
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration"):
        parse_duration(text)


def test_help_lists_watch_and_wait_and_documents_the_timeout() -> None:
    """Both commands are listed, and their help explains the duration format."""
    done = run_cli("--help")
    assert "watch" in done.stdout
    assert "wait" in done.stdout
    for command in ("watch", "wait"):
        helped = run_cli(command, "--help")
        assert helped.returncode == 0
        assert "1m30s, 500ms" in helped.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["watch", "--claim", "nic", "--request", "eth"],
        ["wait", "--claim", "nic", "--request", "eth", "--generation", "99", "--progress", "0.1"],
    ],
    ids=["watch", "wait"],
)
def test_ctrl_c_ends_a_long_running_command_with_interrupted_and_130(command: list[str]) -> None:
    """A real SIGINT once the command runs: one line on stderr, exit 130; watch's lines whole."""
    import signal

    process = subprocess.Popen(
        [sys.executable, "-m", "dra_metadata", "--root", str(SAMPLE_ROOT), *command],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    if command[0] == "watch":
        first = json.loads(process.stdout.readline())  # it runs, and has printed an event
        assert first["event"] == "update"
    else:  # it runs, and has said what it waits for
        assert process.stderr is not None
        assert "still waiting" in process.stderr.readline()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert err.endswith("dra-metadata: interrupted\n")
    for line in out.splitlines():
        json.loads(line)
