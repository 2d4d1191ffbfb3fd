"""Fast paths stay fast: no pydantic, watchfiles or semver where they are not needed."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO, SAMPLE_ROOT

HEAVY = ("pydantic", "watchfiles", "semver")


def loaded_after(code: str) -> list[str]:
    """Heavy top-level packages in sys.modules after running ``code`` in a fresh interpreter."""
    probe = (
        code + "\nimport sys, json\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_import_loads_no_heavy_dependency() -> None:
    """import dra_metadata loads neither pydantic nor watchfiles nor semver."""
    assert loaded_after("import dra_metadata") == []


def test_reading_and_decoding_load_no_heavy_dependency() -> None:
    """Reading, decoding, encoding and the show command load none of them either."""
    code = f"""
import contextlib, io
import dra_metadata as dm
from dra_metadata._cli import main
md = dm.read_resource_claim_template("gpu", "gpu", root={str(SAMPLE_ROOT)!r})
dm.decode(dm.encode(md))
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["show", "--root", {str(SAMPLE_ROOT)!r}, "--claim", "nic", "--request", "eth"]) == 0
"""
    assert loaded_after(code) == []


def test_validation_loads_pydantic_on_demand() -> None:
    """Validating a valid file loads pydantic_core alone; an object with an error loads pydantic."""
    path = SAMPLE_ROOT / "resourceclaims" / "train" / "accel" / "gpu.example.com-metadata.json"
    valid = (
        "import sys, dra_metadata as dm\n"
        f"assert dm.validate(dm.read_file({str(path)!r})) == []\n"
        "assert 'pydantic_core' in sys.modules\n"
    )
    assert loaded_after(valid) == []
    invalid = "import dra_metadata as dm\nassert dm.validate(dm.DeviceMetadata(pod_claim_name='X'))"
    assert "pydantic" in loaded_after(invalid)


def imported(*args: str) -> set[str]:
    """Top-level packages a real ``python -X importtime ARGS`` process imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


TOOLKIT = (
    ("env", "--root", str(SAMPLE_ROOT)),
    ("env", "--root", str(SAMPLE_ROOT), "--format", "json"),
    ("ls", "--root", str(SAMPLE_ROOT)),
    ("get", "--root", str(SAMPLE_ROOT), "--template-claim", "gpu", "--request", "gpu", "uuid"),
)


def test_toolkit_commands_load_no_heavy_dependency() -> None:
    """env, ls, get and show, run for real, import no pydantic, watchfiles or semver."""
    show = ("show", "--root", str(SAMPLE_ROOT), "--claim", "nic", "--request", "eth")
    for args in (*TOOLKIT, show):
        modules = imported("-m", "dra_metadata", *args)
        assert "dra_metadata" in modules, "the probe sees the package's own imports"
        assert modules & set(HEAVY) == set(), args


def test_toolkit_start_up_skips_json_and_shutil() -> None:
    """The trims that keep `env` fast hold: no json or shutil is loaded.

    Counted beyond what this interpreter's own start-up imports (an editable
    install's finder, for one, loads shutil).
    """
    startup = imported("-c", "pass")
    for args in TOOLKIT:
        modules = imported("-m", "dra_metadata", *args)
        assert (modules - startup) & {"json", "shutil"} == set(), args


def test_the_watcher_loads_on_first_use_only() -> None:
    """import dra_metadata loads no watch module, ctypes or asyncio; dm.watch loads _watch."""
    probe = (
        "import sys, dra_metadata as dm\n"
        "before = {m for m in ('dra_metadata._watch', 'ctypes', 'asyncio') if m in sys.modules}\n"
        "assert not before, before\n"
        "dm.watch\n"
        "assert 'dra_metadata._watch' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_a_watch_loads_only_the_backend_it_opens() -> None:
    """Loading the watcher loads no backend; opening one loads that backend alone."""
    probe = (
        "import sys\n"
        "from dra_metadata._watch._backends import open_notifier\n"
        "names = ('inotify', 'polling', 'watchfiles')\n"
        "def loaded():\n"
        "    return [n for n in names if f'dra_metadata._watch._backends.{n}' in sys.modules]\n"
        "import dra_metadata as dm\n"
        "dm.watch\n"
        "assert loaded() == [], loaded()\n"
        "open_notifier('polling').close()\n"
        "assert loaded() == ['polling'], loaded()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_watching_with_inotify_loads_no_heavy_dependency() -> None:
    """watch() and wait_for() on Linux use inotify: no watchfiles, pydantic or semver."""
    code = f"""
import dra_metadata as dm
events = list(dm.watch(claim="nic", request="eth", root={str(SAMPLE_ROOT)!r}, timeout=0))
assert [e.kind for e in events] == ["update"], events
dm.wait_for(claim="nic", request="eth", until=dm.has_network_data, root={str(SAMPLE_ROOT)!r})
"""
    assert loaded_after(code) == []
    wait = ("wait", "--root", str(SAMPLE_ROOT), "--claim", "nic", "--request", "eth")
    assert imported("-m", "dra_metadata", *wait, "--for", "network") & set(HEAVY) == set()


def test_topology_and_doctor_load_no_heavy_dependency() -> None:
    """topology (tree, matrix, json), env --profile and doctor load no heavy package or json."""
    root = str(REPO / "examples" / "topology-tree")
    startup = imported("-c", "pass")
    for args in (
        ("topology", "--root", root),
        ("topology", "--root", root, "--matrix"),
        ("topology", "--root", root, "--json"),
        ("env", "--root", root, "--profile", "cuda", "--profile", "nccl"),
    ):
        modules = imported("-m", "dra_metadata", *args)
        assert modules & set(HEAVY) == set(), args
        assert (modules - startup) & {"json", "shutil"} == set(), args
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dra_metadata", "doctor", "--root", root],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode in (0, 1), done.stderr
    modules = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "dra_metadata" in modules
    assert modules & set(HEAVY) == set()
    assert (modules - startup) & {"json", "shutil", "subprocess"} == set()
    assert loaded_after(f"import dra_metadata as dm; dm.check_live({root!r}); dm.Topology") == []


#: What a one-shot command has no use for: ``inspect`` and what it imports.
INTROSPECTION = ("inspect", "ast", "dis", "tokenize")

# The console script's own entry: what `dra-metadata ARGS` runs.
CONSOLE = (
    "import sys\nfrom dra_metadata_cli import main\nsys.argv[0] = 'dra-metadata'\nsys.exit(main())"
)


def test_one_shot_commands_load_no_introspection() -> None:
    """dra-metadata ls, get, env and show import no inspect, ast, dis or tokenize."""
    show = ("show", "--root", str(SAMPLE_ROOT), "--claim", "nic", "--request", "eth")
    for args in (*TOOLKIT, show):
        modules = imported("-c", CONSOLE, *args)
        assert {"dra_metadata", "msgspec"} <= modules, "the probe sees the command's imports"
        assert modules & set(INTROSPECTION) == set(), args
    assert set(INTROSPECTION) <= imported("-c", "import msgspec"), "what the start-up avoids"


def test_typing_extensions_loads_as_usual_after_the_start_up() -> None:
    """validate, which needs pydantic (and typing_extensions), still runs from the script."""
    path = SAMPLE_ROOT / "resourceclaims" / "nic" / "eth" / "sriov.example.com-metadata.json"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CONSOLE, "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(": valid (metadata.resource.k8s.io/v1beta1)\n")
    assert "| pydantic_core" in done.stderr


def test_msgspec_sees_our_types_alike_with_and_without_typing_extensions() -> None:
    """What msgspec makes of every public type is the same after the script's start-up."""
    probe = (
        "import msgspec.inspect, dra_metadata as dm\n"
        "for name in sorted(dm.__all__):\n"
        "    kind = getattr(dm, name)\n"
        "    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):\n"
        "        try:\n"
        "            print(name, repr(msgspec.inspect.type_info(kind)))\n"
        "        except Exception as err:\n"
        "            print(name, type(err).__name__, err)\n"
    )
    start = "import dra_metadata_cli\ndra_metadata_cli._import_msgspec()\n"
    answers = []
    for code in (probe, start + probe):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
        )
        assert done.returncode == 0, done.stderr
        answers.append(done.stdout)
    assert answers[0].count("\n") > 10
    assert answers[0] == answers[1]
