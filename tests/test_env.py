"""Environment variables from metadata: the naming scheme, values and the three formats."""

from __future__ import annotations

import json
import os
import shutil
import string
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata import _env
from dra_metadata._env import request_variables
from dra_metadata._envtext import dotenv_line, env_name, render, snake_name
from dra_metadata.testing import MetadataTree
from tests import strategies
from tests.conftest import SAMPLE_ROOT
from tests.exploration import examples

A = dm.DeviceAttribute

#: Characters that break naive quoting, plus anything UTF-8 can carry (no NUL).
HOSTILE = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("'\"$`\\!*?[]{}()<>|&;#~=%,:/@ \t\n\r\x0b\x0c\x7f\x85\u2028é日😀")),
        st.characters(codec="utf-8", exclude_characters="\x00"),
    ),
    max_size=24,
)
SNIPPETS = st.sampled_from(
    ["$(id)", "`id`", "${HOME}", "$HOME", "'\\''", '\\"', "\\\\", "\\'", "\\n", "\n", "\r\n"]
)
VALUES = st.one_of(HOSTILE, st.lists(st.one_of(HOSTILE, SNIPPETS), max_size=5).map("".join))


def variables(values: list[str]) -> dict[str, str]:
    """The values under names V0, V1, ... (names are never hostile: we make them)."""
    return {f"DRA_T_V{index}": value for index, value in enumerate(values)}


# In-memory objects for the naming functions below, which take a DeviceMetadata and
# touch no file. Tests that read files write them with the testing kit (dra_metadata_tree).
def gpu(name: str, /, **attributes: dm.DeviceAttribute) -> dm.Device:
    """A gpu.example.com device with the given attributes."""
    return dm.Device("gpu.example.com", "pool-a", name, attributes=attributes)


def request(*devices: dm.Device, name: str = "gpu") -> dm.DeviceMetadata:
    """Metadata of one request holding ``devices`` (in memory)."""
    return dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest(name, devices),))


def names_values(md: dm.DeviceMetadata, prefix: str = "P_") -> dict[str, str]:
    """request_variables() of ``md`` as a name -> value dict."""
    found = request_variables(prefix, "claim 'c' request 'r'", md)
    assert len({v.name for v in found}) == len(found), "no name twice in a plain request"
    return {v.name: v.value for v in found}


# --------------------------------------------------------------------------- #
# Names and values
# --------------------------------------------------------------------------- #


def test_names_are_upper_snake_and_everything_else_is_underscore() -> None:
    """Claim and request names upper-case; any character but A-Z and 0-9 becomes '_'."""
    assert env_name("vfio-gpu") == "VFIO_GPU"
    assert env_name("a.b_c/d é") == "A_B_C_D__"
    assert env_name("gpu0") == "GPU0"


#: Attribute names as drivers publish them, and the variable name each reads as.
ATTRIBUTE_NAMES = [
    ("pciBusID", "PCI_BUS_ID"),  # the standard attribute
    ("pcieRoot", "PCIE_ROOT"),
    ("numaNode", "NUMA_NODE"),
    ("uuid", "UUID"),
    ("cudaComputeCapability", "CUDA_COMPUTE_CAPABILITY"),  # NVIDIA
    ("driverVersion", "DRIVER_VERSION"),
    ("productName", "PRODUCT_NAME"),
    ("pcieBusID", "PCIE_BUS_ID"),
    ("parentUUID", "PARENT_UUID"),
    ("iommuFDEnabled", "IOMMU_FD_ENABLED"),
    ("cardIndex", "CARD_INDEX"),  # AMD
    ("simdPerCU", "SIMD_PER_CU"),
    ("numCPUs", "NUM_CPUS"),  # dra-driver-cpu
    ("numaNodeID", "NUMA_NODE_ID"),
    ("cacheL3ID", "CACHE_L3_ID"),
    ("cpuID", "CPU_ID"),
    ("coreID", "CORE_ID"),
    ("socketID", "SOCKET_ID"),
    ("smtEnabled", "SMT_ENABLED"),
    ("ifName", "IF_NAME"),  # dranet
    ("macAddress", "MAC_ADDRESS"),
    ("rdma", "RDMA"),
    ("sriovVfs", "SRIOV_VFS"),
    ("sriovVFs", "SRIOV_VFS"),  # SR-IOV
    ("PFName", "PF_NAME"),
    ("vfIDs", "VF_IDS"),
    ("IPv4Address", "IPV4_ADDRESS"),
    ("exposePCIeRoots", "EXPOSE_PCIE_ROOTS"),
    ("HTTPServer", "HTTP_SERVER"),  # a run of capitals, then a word
    ("gpu0Memory", "GPU0_MEMORY"),  # digits stay with their word
    ("smt_enabled", "SMT_ENABLED"),
    ("rdma-device", "RDMA_DEVICE"),
]


@pytest.mark.parametrize(("attribute", "expected"), ATTRIBUTE_NAMES)
def test_attribute_names_read_as_written(attribute: str, expected: str) -> None:
    """A run of capitals is one word, a plural or one-letter tail stays on it, digits too."""
    assert snake_name(attribute) == expected


def test_the_docs_table_of_names_is_what_env_writes() -> None:
    """Every row of the attribute -> variable table in docs/env.md is snake_name()'s answer."""
    text = (Path(__file__).parent.parent / "docs" / "env.md").read_text(encoding="utf-8")
    table = text[text.index("| attribute | variable |") :].split("\n\n", 1)[0]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:]]
    pairs = [(name.strip(" `"), variable.strip(" `")) for name, variable in rows]
    assert len(pairs) >= 10
    assert [(name, snake_name(name)) for name, _ in pairs] == pairs


def test_names_from_the_real_drivers_tree_read_as_written() -> None:
    """dra-driver-cpu's numCPUs and the SR-IOV driver's PFName, as env writes them."""
    found = dm.env_vars(root=SAMPLE_ROOT.parent / "real-drivers-tree")
    assert found["DRA_CPUS_CPUS_NUM_CPUS"] == "48,48"
    assert found["DRA_CPUS_CPUS_0_NUMA_NODE_ID"] == "0"
    assert "DRA_VF_NET_0_PF_NAME" in found
    assert not [name for name in found if "CP_US" in name]


def _snake_name_by_the_rule(text: str) -> str:
    """snake_name()'s rule, a character at a time: the oracle of the test below."""
    upper, lower, digits = string.ascii_uppercase, string.ascii_lowercase, string.digits
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch in upper and i > 0:
            before, after = text[i - 1], text[i + 1 : i + 3]
            if (
                before in lower
                or before in digits
                or (before in upper and len(after) == 2 and all(c in lower for c in after))
            ):
                out.append("_")
        out.append(ch.upper() if ch in upper + lower + digits else "_")
    return "".join(out)


@given(st.text(alphabet=st.sampled_from("abBC1-é\udcff"), max_size=12) | st.text())
def test_snake_name_follows_its_rule_on_any_text(text: str) -> None:
    """Capitals, digits, separators and non-ASCII text, as the rule says character by character."""
    assert snake_name(text) == _snake_name_by_the_rule(text)
    assert env_name(text) == "".join(
        ch.upper() if ch in string.ascii_letters + string.digits else "_" for ch in text
    )


@given(st.text(max_size=30))
def test_every_name_is_a_valid_variable_name(text: str) -> None:
    """Whatever a directory or attribute is called, the name is [A-Z0-9_]*."""
    for made in (env_name(text), snake_name(text)):
        assert all(ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_" for ch in made)


def test_values_print_as_documented() -> None:
    """Ints in decimal, booleans true/false, versions as written, lists comma-joined."""
    md = request(
        gpu(
            "gpu-0",
            index=A(int=-7),
            healthy=A(bool=False),
            driverVersion=A(version="1.2.3-rc.1"),
            cores=A(ints=(0, 1, 2)),
            flags=A(bools=(True, False)),
            names=A(strings=("a", "b")),
            empty=A(ints=()),
            nothing=A(),
        )
    )
    env = names_values(md)
    assert env["P_0_INDEX"] == "-7"
    assert env["P_0_HEALTHY"] == "false"
    assert env["P_0_DRIVER_VERSION"] == "1.2.3-rc.1"
    assert env["P_0_CORES"] == "0,1,2"
    assert env["P_0_FLAGS"] == "true,false"
    assert env["P_0_NAMES"] == "a,b"
    assert "P_0_EMPTY" not in env  # an empty list is no value, as in the library
    assert "P_0_NOTHING" not in env


def test_request_variables_follow_the_documented_scheme() -> None:
    """Count, devices, drivers, request, aggregates, then each device in order."""
    md = dm.DeviceMetadata(
        requests=(
            dm.DeviceMetadataRequest(
                "gpu/high-memory",
                (
                    gpu("gpu-0", uuid=A(string="u0"), index=A(int=0), cores=A(ints=(0, 1))),
                    gpu("gpu-1", uuid=A(string="u1"), index=A(int=1), cores=A(ints=(2, 3))),
                ),
            ),
        )
    )
    assert list(names_values(md).items()) == [
        ("P_COUNT", "2"),
        ("P_DEVICES", "gpu-0,gpu-1"),
        ("P_DRIVERS", "gpu.example.com"),
        ("P_REQUEST", "gpu/high-memory"),
        ("P_INDEX", "0,1"),
        ("P_UUID", "u0,u1"),
        ("P_0_NAME", "gpu-0"),
        ("P_0_DRIVER", "gpu.example.com"),
        ("P_0_POOL", "pool-a"),
        ("P_0_CORES", "0,1"),
        ("P_0_INDEX", "0"),
        ("P_0_UUID", "u0"),
        ("P_1_NAME", "gpu-1"),
        ("P_1_DRIVER", "gpu.example.com"),
        ("P_1_POOL", "pool-a"),
        ("P_1_CORES", "2,3"),
        ("P_1_INDEX", "1"),
        ("P_1_UUID", "u1"),
    ]


def test_aggregates_need_every_device_and_lists_only_for_one_device() -> None:
    """An attribute missing on a device, or a list on several devices, has no request variable."""
    two = request(
        gpu("gpu-0", uuid=A(string="u0"), model=A(string="m"), cores=A(ints=(0,))),
        gpu("gpu-1", uuid=A(string="u1"), cores=A(ints=(1,))),
    )
    env = names_values(two)
    assert env["P_UUID"] == "u0,u1"
    assert "P_MODEL" not in env
    assert "P_CORES" not in env
    one = names_values(request(gpu("gpu-0", cores=A(ints=(0, 1)))))
    assert one["P_CORES"] == "0,1"
    assert names_values(request())["P_COUNT"] == "0"


def test_network_fields_per_device_and_per_request() -> None:
    """interfaceName, ips and hardwareAddress become INTERFACE_NAME, IPS, HARDWARE_ADDRESS."""
    net = dm.NetworkDeviceData(
        interface_name="net1", ips=("10.0.0.5/24", "fd00::5/64"), hardware_address="aa:bb"
    )
    env = names_values(request(dm.Device("sriov.example.com", "p", "vf-0", network_data=net)))
    assert env["P_0_INTERFACE_NAME"] == "net1"
    assert env["P_0_IPS"] == "10.0.0.5/24,fd00::5/64"
    assert env["P_0_HARDWARE_ADDRESS"] == "aa:bb"
    assert env["P_IPS"] == "10.0.0.5/24,fd00::5/64"
    half = names_values(
        request(
            dm.Device("d", "p", "a", network_data=dm.NetworkDeviceData(interface_name="x")),
            dm.Device("d", "p", "b"),
        )
    )
    assert half["P_0_INTERFACE_NAME"] == "x"
    assert "P_INTERFACE_NAME" not in half
    assert "P_1_INTERFACE_NAME" not in half


def test_attributes_are_qualified_when_their_local_names_meet() -> None:
    """Two domains with one local name, a reserved name or a leading digit get the domain."""
    device = gpu(
        "gpu-0",
        uuid=A(string="mine"),
        **{
            "other.example.com/uuid": A(string="theirs"),
            "name": A(string="n"),
            "0day": A(int=1),
            "resource.kubernetes.io/pciBusID": A(string="0000:3b:00.0"),
        },
    )
    env = names_values(request(device))
    assert env["P_0_GPU_EXAMPLE_COM_UUID"] == "mine"
    assert env["P_0_OTHER_EXAMPLE_COM_UUID"] == "theirs"
    assert env["P_0_GPU_EXAMPLE_COM_NAME"] == "n"
    assert env["P_0_NAME"] == "gpu-0"
    assert env["P_0_GPU_EXAMPLE_COM_0DAY"] == "1"
    assert env["P_0_PCI_BUS_ID"] == "0000:3b:00.0"


def test_the_naming_choice_is_made_once_per_request() -> None:
    """If any device of the request has a clash, every device uses the qualified name."""
    env = names_values(
        request(
            gpu("gpu-0", uuid=A(string="a")),
            gpu("gpu-1", uuid=A(string="b"), **{"x.example.com/uuid": A(string="c")}),
        )
    )
    assert env["P_0_GPU_EXAMPLE_COM_UUID"] == "a"
    assert env["P_1_GPU_EXAMPLE_COM_UUID"] == "b"
    assert env["P_GPU_EXAMPLE_COM_UUID"] == "a,b"
    assert not any(name.endswith("_UUID") and "EXAMPLE" not in name for name in env)


# --------------------------------------------------------------------------- #
# Collisions and NUL: errors that name both sources, never an overwrite
# --------------------------------------------------------------------------- #


def test_two_claims_that_map_to_one_prefix_are_an_error_naming_both(
    dra_metadata_tree: MetadataTree,
) -> None:
    """Claims a-b and a_b both want DRA_A_B_R_: neither is written, one error names both."""
    tree = dra_metadata_tree
    for claim, device in (("a-b", "x"), ("a_b", "y"), ("ok", "z")):
        tree.claim(claim).request("r").device("gpu.example.com", "pool-a", device)
    tree.write()
    variables, problems = _env.collect(dm.inventory(tree.root))
    assert [str(p) for p in problems] == [
        "DRA_A_B_R_COUNT: claim 'a-b' request 'r' and claim 'a_b' request 'r' map to the "
        "same name (and 6 more names they share)"
    ]
    assert isinstance(problems[0], dm.EnvError)
    assert not any(name.startswith("DRA_A_B_") for name in variables)
    assert variables["DRA_OK_R_0_NAME"] == "z"
    with pytest.raises(dm.EnvError, match="claim 'a-b' request 'r' and claim 'a_b'"):
        dm.env_vars(root=tree.root)


def test_a_claim_and_a_template_claim_of_one_name_collide(dra_metadata_tree: MetadataTree) -> None:
    """resourceclaims/gpu and resourceclaimtemplates/gpu both map to DRA_GPU_...: an error."""
    tree = dra_metadata_tree
    tree.claim("gpu").request("gpu").device("gpu.example.com", "pool-a", "x")
    tree.template_claim("gpu").request("gpu").device("gpu.example.com", "pool-a", "y")
    tree.write()
    root = tree.root
    with pytest.raises(
        dm.EnvError, match="claim 'gpu' request 'gpu' and template claim 'gpu' request 'gpu'"
    ):
        dm.env_vars(root=root)
    assert dm.env_vars(root=root, pod_claim="gpu")["DRA_GPU_GPU_0_NAME"] == "y"
    assert dm.env_vars(root=root, claim="gpu", prefix="C_")["C_GPU_GPU_0_NAME"] == "x"


def checked(
    md: dm.DeviceMetadata, source: str = "s"
) -> tuple[dict[str, str], list[dm.DRAMetadataError]]:
    """The variables _checked() keeps of the request ``md`` checked whole, and every problem."""
    problems: list[dm.DRAMetadataError] = []
    _, parts = _env._request_parts("P_", source, md)
    return _env._checked(list(parts), problems, problems), problems


def test_two_attribute_keys_of_one_name_are_an_error_naming_both() -> None:
    """Keys a.b/x and a-b/x make the same variable: both are named, neither is kept."""
    md = request(gpu("g", **{"a.b/x": A(string="1"), "a-b/x": A(string="2")}))
    variables, problems = checked(md, "claim 'c' request 'r'")
    assert len(problems) == 1
    message = str(problems[0])
    assert message.startswith("P_0_A_B_X: claim 'c' request 'r' device 0 attribute ")
    assert "'a-b/x'" in message
    assert "'a.b/x'" in message
    assert "P_0_A_B_X" not in variables
    assert "P_A_B_X" not in variables


def test_an_unqualified_and_a_qualified_key_of_one_attribute_collide() -> None:
    """uuid and gpu.example.com/uuid on one device are one attribute twice: an error."""
    md = request(gpu("g", uuid=A(string="1"), **{"gpu.example.com/uuid": A(string="2")}))
    variables, problems = checked(md)
    assert [str(p).split(":")[0] for p in problems] == ["P_0_UUID"]
    assert "P_UUID" not in variables


def test_a_nul_in_a_value_leaves_that_variable_out_with_an_error() -> None:
    """No environment variable can hold a NUL: the variable is refused, by name, not cut."""
    md = request(gpu("g", model=A(string="A\x00B"), uuid=A(string="u")))
    variables, problems = checked(md, "claim 'c' request 'r'")
    assert sorted(str(p).split(":")[0] for p in problems) == ["P_0_MODEL", "P_MODEL"]
    assert "holds a NUL character" in str(problems[0])
    assert "P_0_MODEL" not in variables
    assert variables["P_0_UUID"] == "u"


def test_env_vars_reads_the_sample_tree() -> None:
    """The public env_vars() gives the sample GPUs' UUIDs, comma-joined in device order."""
    env = dm.env_vars(root=SAMPLE_ROOT)
    assert env["DRA_GPU_GPU_UUID"] == (
        "GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11,GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22"
    )
    assert env["DRA_INFERENCE_GPU_REQUEST"] == "gpu/high-memory"
    assert env["DRA_TRAIN_ACCEL_DRIVERS"] == "gpu.example.com,rdma.example.com"
    assert env["DRA_NIC_ETH_0_INTERFACE_NAME"] == "net1"
    assert list(env) == list(dm.env_vars(root=SAMPLE_ROOT)), "the order is deterministic"


def test_env_vars_refuses_bad_arguments() -> None:
    """Both claim kinds at once, or a prefix that cannot start a name, are ValueErrors."""
    with pytest.raises(ValueError, match="not both"):
        dm.env_vars(root=SAMPLE_ROOT, claim="a", pod_claim="b")
    for prefix in ("", "1X", "A-B", "A B"):
        with pytest.raises(ValueError, match="cannot start a variable name"):
            dm.env_vars(root=SAMPLE_ROOT, prefix=prefix)
    with pytest.raises(dm.InvalidNameError):
        dm.env_vars(root=SAMPLE_ROOT, claim="..")


# --------------------------------------------------------------------------- #
# Shell output: evaluated by a real sh (dash) and a real bash
# --------------------------------------------------------------------------- #

#: The shells that read ``env``'s output here, each as the command line that starts it:
#: /bin/sh, dash, bash, zsh and busybox's sh (CI installs zsh and busybox).
SHELLS = [
    command
    for command in (
        ["/bin/sh"],
        [shutil.which("dash") or ""],
        [shutil.which("bash") or ""],
        [shutil.which("zsh") or ""],
        [shutil.which("busybox") or "", "sh"],
    )
    if command[0]
]


def sourced(shell: list[str], script: Path, how: str) -> dict[str, str]:
    """The environment ``shell`` ends up with after sourcing or eval-ing ``script``."""
    load = f". {script}" if how == "source" else f'eval "$(cat {script})"'
    done = subprocess.run(
        [*shell, "-c", f"{load} && exec env -0"],
        capture_output=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, str] = {}
    for item in done.stdout.split(b"\0"):
        if item:
            name, _, value = item.partition(b"=")
            found[name.decode()] = value.decode("utf-8")
    return found


def test_the_shells_are_real() -> None:
    """/bin/sh and bash exist here (zsh and busybox too under CI), so the tests run for real."""
    names = {os.path.basename(shell[0]) for shell in SHELLS}
    assert {"sh", "bash"} <= names
    if os.environ.get("CI") == "true":
        assert {"dash", "zsh", "busybox"} <= names, names


#: Values some shell would expand if they were written bare: zsh's ``=cmd`` at the start
#: and after ``:`` in an assignment, tilde forms, globs, and the nccl profile's ``=net1``.
EXPANDED = ["=ls", "==ls", "a:=ls", "=", "~", "~root", "a:~", "a:~/b", "*", "[ab]", "=net1,net2"]


@pytest.mark.parametrize("shell", SHELLS, ids=lambda shell: " ".join(shell))
def test_values_a_shell_would_expand_come_back_exactly(tmp_path: Path, shell: list[str]) -> None:
    """=ls, a:=ls, ~ and globs are quoted: every shell reads them back as written."""
    wanted = {f"V{i}": value for i, value in enumerate(EXPANDED)}
    text, refused = render(wanted, "shell")
    assert refused == []
    script = tmp_path / "dra.env"
    script.write_bytes(text)
    for how in ("source", "eval"):
        got = sourced(shell, script, how)
        assert {name: got.get(name) for name in wanted} == wanted, how


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(VALUES, min_size=1, max_size=12))
def test_shell_output_evaluates_to_every_value_exactly(tmp_path: Path, values: list[str]) -> None:
    """Sourced or eval-ed in sh and bash, the shell output reproduces every hostile value."""
    wanted = variables(values)
    text, refused = render(wanted, "shell")
    assert refused == []
    script = tmp_path / "dra.env"
    script.write_bytes(text)
    for shell in SHELLS:
        for how in ("source", "eval"):
            got = sourced(shell, script, how)
            assert {name: got.get(name) for name in wanted} == wanted, (shell, how)


def test_shell_output_runs_nothing_it_is_given() -> None:
    """$(...), backticks and quotes in values are data: nothing they hold is executed."""
    value = "'; touch pwned; '$(touch pwned)`touch pwned`\"$(touch pwned)\""
    text, _ = render({"V": value}, "shell")
    assert text == (
        b"export V=''\\''; touch pwned; '\\''$(touch pwned)`touch pwned`\"$(touch pwned)\"'\n"
    )


# --------------------------------------------------------------------------- #
# dotenv output: compose's rules and python-dotenv read it back
# --------------------------------------------------------------------------- #


def compose_read(text: str) -> dict[str, str]:
    """Read the lines dotenv_line() writes with the rules of docker compose's env_file parser.

    Written from compose's behaviour (compose-spec/compose-go dotenv), for the
    three forms we emit: bare, "double" (escapes \\n \\r \\\\ \\" and friends,
    then $ expansion) and 'single' (backslash-quote is a quote, nothing else).
    """
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        eq = text.index("=", pos)
        name = text[pos:eq]
        pos = eq + 1
        quote = text[pos] if pos < len(text) else ""
        if quote not in ("'", '"'):
            end = text.index("\n", pos)
            value = text[pos:end].split(" #")[0].rstrip()
            assert "$" not in value
            out[name] = value
            pos = end + 1
            continue
        chars: list[str] = []
        escape = False
        pos += 1
        while True:
            ch = text[pos]
            pos += 1
            if ch == quote and not escape:
                break
            if escape:
                escape = False
                if ch != quote:
                    chars.append("\\")
                chars.append(ch)
            elif ch == "\\":
                escape = True
            else:
                chars.append(ch)
        raw = "".join(chars)
        if quote == '"':
            simple = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", "f": "\f"}
            simple |= {"v": "\v", "\\": "\\", '"': '"', "$": "$"}
            decoded: list[str] = []
            i = 0
            while i < len(raw):
                if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in simple:
                    decoded.append(simple[raw[i + 1]])
                    i += 2
                else:
                    assert raw[i] != "$", "compose would expand it"
                    decoded.append(raw[i])
                    i += 1
            raw = "".join(decoded)
        out[name] = raw
        assert text[pos] == "\n"
        pos += 1
    return out


def refused_by_dotenv(value: str) -> bool:
    """The documented rule: values no dotenv form carries exactly for both readers."""
    return value.endswith("\\") or (
        "$" in value and ("\r" in value or "\\\\" in value or "\\'" in value)
    )


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(VALUES, min_size=1, max_size=12))
def test_dotenv_output_reads_back_exactly(tmp_path: Path, values: list[str]) -> None:
    """compose's rules and python-dotenv (interpolate=False) read every accepted value exactly."""
    from dotenv import dotenv_values

    wanted = variables(values)
    text, refused = render(wanted, "dotenv")
    kept = {name: value for name, value in wanted.items() if not refused_by_dotenv(value)}
    assert sorted(str(err).split(":")[0] for err in refused) == sorted(set(wanted) - set(kept))
    assert compose_read(text.decode("utf-8")) == kept
    env_file = tmp_path / "dra.env"
    env_file.write_bytes(text)
    assert dict(dotenv_values(env_file, interpolate=False)) == kept


def test_dotenv_forms() -> None:
    """Plain values bare (docker --env-file reads them the same), others quoted by the rule."""
    assert dotenv_line("A", "10.20.30.41/24,fd00::29/64") == "A=10.20.30.41/24,fd00::29/64"
    assert dotenv_line("A", "") == "A="
    assert dotenv_line("A", "two words") == 'A="two words"'
    assert dotenv_line("A", 'say "hi"\nbye') == 'A="say \\"hi\\"\\nbye"'
    assert dotenv_line("A", "cost: $5, it's") == "A='cost: $5, it\\'s'"
    for bad in ("ends\\", "$ and \\\\", "$ and \\'", "$\r"):
        with pytest.raises(dm.EnvError, match="no dotenv form reads back the same"):
            dotenv_line("A", bad)


def test_json_output_is_one_object_in_order() -> None:
    """--format json is one object whose items are the variables, in order, values exact."""
    wanted = {"B": "x\ny", "A": "\u2028'\"$"}
    text, refused = render(wanted, "json")
    assert refused == []
    assert list(json.loads(text).items()) == list(wanted.items())


def standard_forms(md: dm.DeviceMetadata) -> bool:
    """Whether every device's pciBusID, numaNode and pcieRoot are what the standard defines
    (env takes it)."""
    from dra_metadata._standard import standard_problem

    return all(
        standard_problem(device, name) is None
        for _, device in md.devices()
        for name in ("pciBusID", "numaNode", "pcieRoot")
    )


def _checked_in_parts(md: dm.DeviceMetadata) -> tuple[dict[str, str], list[str]]:
    """A request checked a part at a time, as collect_into() does when parts are independent."""
    _, parts = _env._request_parts("P_", "claim 'c' request 'r'", md)
    shared: list[dm.DRAMetadataError] = []
    nul: list[dm.DRAMetadataError] = []
    result: dict[str, str] = {}
    for part in parts:
        result.update(_env._checked([part], shared, nul))
    return result, [str(problem) for problem in shared + nul]


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(strategies.metadata)
def test_independent_parts_checked_alone_give_what_checking_all_gives(
    md: dm.DeviceMetadata,
) -> None:
    """Independent parts checked alone give the variables and problems of one check over all."""
    assume(standard_forms(md))
    independent, _ = _env._request_parts("P_", "claim 'c' request 'r'", md)
    assume(independent)
    variables, problems = checked(md, "claim 'c' request 'r'")
    assert _checked_in_parts(md) == (variables, [str(problem) for problem in problems])


def test_a_name_part_starting_with_a_digit_makes_parts_dependent() -> None:
    """Domain 1x.example.com qualifies uuid as 1X_EXAMPLE_COM_UUID: one check over the request."""
    md = request(
        gpu("g", uuid=A(string="a"), **{"1x.example.com/uuid": A(string="b")}),
        gpu("h", uuid=A(string="c"), **{"1x.example.com/uuid": A(string="d")}),
    )
    independent, _ = _env._request_parts("P_", "s", md)
    assert not independent
    variables, problems = checked(md)
    assert variables["P_1_1X_EXAMPLE_COM_UUID"] == "d"
    assert problems == []


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.too_slow])
@given(strategies.metadata)
def test_a_request_of_many_devices_redone_per_device_gives_the_same_variables(
    md: dm.DeviceMetadata,
) -> None:
    """Above _KEEP_DEVICES the per-device work is done again: the same variables, in order."""
    assume(standard_forms(md))
    kept = request_variables("P_", "s", md)
    saved = _env._KEEP_DEVICES
    _env._KEEP_DEVICES = 0  # type: ignore[misc] # the threshold, lowered for this test
    try:
        redone = request_variables("P_", "s", md)
    finally:
        _env._KEEP_DEVICES = saved  # type: ignore[misc]
    assert redone == kept
