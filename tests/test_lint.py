"""Linting metadata files: each rule fires on a file with its problem, never on a realistic one."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._lint import MAX_ATTRIBUTES, RULES, LintProblem, lint
from dra_metadata.testing import MetadataTree, RequestBuilder, version
from tests.conftest import REPO, run_cli
from tests.exploration import examples
from tests.test_decode import damaged_streams

STANDARD = "resource.kubernetes.io"
FUTURE = "metadata.resource.k8s.io/v2"


class Sample:
    """A realistic tree: the shapes drivers really write, all lint-clean."""

    def __init__(self, root: Path) -> None:
        tree = self.tree = MetadataTree(root)
        self.gpu = tree.template_claim("gpu").request("gpu")
        self.gpu.device(
            "gpu.example.com",
            "worker-0",
            "gpu-0",
            uuid="GPU-1",
            index=0,
            healthy=True,
            driverVersion=version("570.124.6"),
            migProfiles=["1g.10gb", "2g.20gb"],
            lanes=[8, 16],
            flags=[True, False],
            firmware=[version("1.0.0"), version("1.1.0")],
            attributes={
                f"{STANDARD}/pciBusID": "0000:3b:00.0",
                f"{STANDARD}/pcieRoot": "pci0000:3a",
                f"{STANDARD}/numaNode": 0,
            },
        )
        self.nic = tree.claim("nic").request("eth")
        self.nic.device(
            "sriov.example.com", "node-a", "vf-3", attributes={f"{STANDARD}/numaNode": [1, 0]}
        ).network(
            interface_name="net1",
            ips=["10.0.0.5/24", "fd00::5/64"],
            hardware_address="52:54:00:ab:cd:03",
        )
        # Merely unusual, but correct:
        self.cpus = tree.claim("cpus").request("cpus")
        self.cpus.device("dra.cpu", "node-a", "cpu-0")  # no attributes at all
        tree.set_versions([dm.V1BETA1], driver="dra.cpu")  # v1beta1 only
        self.sub = tree.template_claim("inference").request("gpu/high-memory")  # in dir gpu
        self.sub.device("gpu.example.com", "worker-1", "gpu-1", model="H100")
        self.future = tree.claim("future").request("r")
        self.future.device("future.example.com", "p", "d", model="x")
        tree.set_versions([FUTURE, dm.V1BETA1, dm.V1ALPHA1], driver="future.example.com")
        self.own = tree.claim("own").request("r")  # a driver's own pciBusID attribute
        self.own.device("own.example.com", "p", "d", pciBusID="0000:AF:00.0")
        self.full = tree.claim("full").request("r")
        self.full.device(
            "full.example.com", "p", "d", attributes={f"a{i}": i for i in range(MAX_ATTRIBUTES)}
        )
        tree.write()

    def file(self, request: RequestBuilder) -> tuple[bytes, str]:
        path = request.path()
        return path.read_bytes(), str(path)


@pytest.fixture
def sample(tmp_path: Path) -> Sample:
    return Sample(tmp_path / "dra-device-attributes")


def codes(data: bytes, path: str | None = None) -> list[tuple[str, str]]:
    return [(p.code, p.field) for p in lint(data, path=path)]


def test_realistic_files_have_no_problems(sample: Sample) -> None:
    """Every file of a realistic tree, unusual shapes included, lints clean."""
    files = sorted(sample.tree.root.rglob("*-metadata.json"))
    assert len(files) == 7
    for path in files:
        assert lint(path.read_bytes(), path=str(path)) == [], path


def test_sample_tree_lints_clean_but_for_its_v1alpha1_only_driver(sample_root: Path) -> None:
    """The committed sample tree is clean, except the old driver that writes v1alpha1 only."""
    found = {
        str(path.relative_to(sample_root)): [p.code for p in lint(path.read_bytes(), path=path)]
        for path in sample_root.rglob("*-metadata.json")
    }
    assert found.pop("resourceclaims/vfio-gpu/gpu/vfio.gpu.example.com-metadata.json") == ["DRA106"]
    assert len(found) == 6
    assert all(problems == [] for problems in found.values()), found


Case = Callable[[Sample], tuple[bytes, str | None]]


def replace(request: str, old: str, new: str, count: int = -1) -> Case:
    def make(sample: Sample) -> tuple[bytes, str | None]:
        data, path = sample.file(getattr(sample, request))
        assert old.encode() in data, old
        return data.replace(old.encode(), new.encode(), count), path

    return make


def at_path(request: str, path: str) -> Case:
    def make(sample: Sample) -> tuple[bytes, str | None]:
        data, _ = sample.file(getattr(sample, request))
        return data, str(sample.tree.root / path)

    return make


def encoded(request: str, *versions: str, generations: tuple[int, ...] = ()) -> Case:
    def make(sample: Sample) -> tuple[bytes, str | None]:
        req: RequestBuilder = getattr(sample, request)
        if generations:
            data = b"".join(
                req.encode(generation=g, versions=[v])
                for g, v in zip(generations, versions, strict=True)
            )
        else:
            data = req.encode(versions=versions)
        return data, str(req.path())

    return make


def appended(request: str, tail: str) -> Case:
    def make(sample: Sample) -> tuple[bytes, str | None]:
        data, path = sample.file(getattr(sample, request))
        return data + tail.encode(), path

    return make


def built(make_tree: Callable[[MetadataTree], RequestBuilder]) -> Case:
    def make(sample: Sample) -> tuple[bytes, str | None]:
        tree = MetadataTree(sample.tree.root.parent / "other")
        request = make_tree(tree)
        tree.write()
        return sample.file(request)

    return make


def _many_attributes(tree: MetadataTree) -> RequestBuilder:
    request = tree.claim("c").request("r")
    request.device(
        "d.example.com", "p", "d", attributes={f"a{i}": i for i in range(MAX_ATTRIBUTES + 1)}
    )
    return request


def _generation_zero(tree: MetadataTree) -> RequestBuilder:
    request = tree.claim("c", generation=0).request("r")
    request.device("d.example.com", "p", "d")
    return request


DEVICE = "requests[0].devices[0]"
NET = f"{DEVICE}.networkData"
ATTRS = f"{DEVICE}.attributes"

# (code, the sample request the bad file is made from, how, the field it must name)
CASES: list[tuple[str, str, Case, str]] = [
    ("DRA101", "nic", replace("nic", '"hardwareAddress"', '"hwAddress"'), f"{NET}.hwAddress"),
    (
        "DRA101",
        "nic",
        replace("nic", '"hardwareAddress"', '"hardwareAddr"'),
        f"{NET}.hardwareAddr",
    ),
    ("DRA101", "nic", replace("nic", '"ips"', '"addresses"'), f"{NET}.addresses"),
    ("DRA101", "nic", replace("nic", '"ips"', '"ip"'), f"{NET}.ip"),
    (
        "DRA102",
        "gpu",
        replace("gpu", '"string": "GPU-1"', '"stringValue": "GPU-1"'),
        f"{ATTRS}[uuid].stringValue",
    ),
    ("DRA102", "gpu", replace("gpu", '"int": 0', '"intValue": 0'), f"{ATTRS}[index].intValue"),
    (
        "DRA102",
        "gpu",
        replace("gpu", '"bool": true', '"boolValue": true'),
        f"{ATTRS}[healthy].boolValue",
    ),
    (
        "DRA102",
        "gpu",
        replace("gpu", '"version": "570', '"versionValue": "570'),
        f"{ATTRS}[driverVersion].versionValue",
    ),
    (
        "DRA103",
        "gpu",
        replace("gpu", f"{STANDARD}/pciBusID", "resource.k8s.io/pciBusID"),
        f"{ATTRS}[resource.k8s.io/pciBusID]",
    ),
    (
        "DRA103",
        "gpu",
        replace("gpu", f"{STANDARD}/pcieRoot", "kubernetes.io/pcieRoot"),
        f"{ATTRS}[kubernetes.io/pcieRoot]",
    ),
    (
        "DRA103",
        "nic",
        replace("nic", f"{STANDARD}/numaNode", f"{STANDARD}/numanode"),
        f"{ATTRS}[{STANDARD}/numanode]",
    ),
    (
        "DRA104",
        "gpu",
        replace("gpu", "0000:3b:00.0", "0000:3B:00.0"),
        f"{ATTRS}[{STANDARD}/pciBusID]",
    ),
    ("DRA104", "gpu", replace("gpu", "pci0000:3a", "pci0000:3A"), f"{ATTRS}[{STANDARD}/pcieRoot]"),
    ("DRA105", "nic", encoded("nic", dm.V1ALPHA1, dm.V1BETA1), "stream[1].apiVersion"),
    ("DRA105", "future", encoded("future", dm.V1BETA1, FUTURE), "stream[1].apiVersion"),
    ("DRA106", "nic", encoded("nic", dm.V1ALPHA1), "stream"),
    ("DRA106", "future", encoded("future", FUTURE, dm.V1ALPHA1), "stream"),
    (
        "DRA107",
        "nic",
        encoded("nic", dm.V1BETA1, dm.V1ALPHA1, generations=(2, 1)),
        "stream[1]",
    ),
    (
        "DRA107",
        "nic",
        replace("nic", '"net1"', '"net2"', 1),  # only the first (v1beta1) entry changed
        "stream[1]",
    ),
    ("DRA108", "nic", appended("nic", '{"kind": "DeviceMetadata", "apiVersion'), "stream[2]"),
    (
        "DRA108",
        "cpus",
        appended(
            "cpus", f'{{"kind": "DeviceMetadata", "apiVersion": "{dm.V1ALPHA1}", "requests": 5}}'
        ),
        "stream[1]",
    ),
    (
        "DRA109",
        "nic",
        at_path("nic", "resourceclaimtemplates/nic/eth/sriov.example.com-metadata.json"),
        "podClaimName",
    ),
    (
        "DRA109",
        "gpu",
        at_path("gpu", "resourceclaims/gpu/gpu/gpu.example.com-metadata.json"),
        "podClaimName",
    ),
    (
        "DRA110",
        "nic",
        at_path("nic", "resourceclaims/nic-0/eth/sriov.example.com-metadata.json"),
        "metadata.name",
    ),
    (
        "DRA110",
        "gpu",
        at_path("gpu", "resourceclaimtemplates/gpus/gpu/gpu.example.com-metadata.json"),
        "podClaimName",
    ),
    (
        "DRA110",
        "nic",
        at_path(
            "nic", "plugins/sriov.example.com/dra-device-metadata/kube-system_nic/eth/metadata.json"
        ),
        "metadata.name",
    ),
    (
        "DRA111",
        "nic",
        at_path("nic", "resourceclaims/nic/eth/nic.example.com-metadata.json"),
        f"{DEVICE}.driver",
    ),
    (
        "DRA111",
        "nic",
        at_path("nic", "plugins/nic.example.com/dra-device-metadata/default_nic/eth/metadata.json"),
        f"{DEVICE}.driver",
    ),
    (
        "DRA112",
        "sub",
        at_path(
            "sub", "resourceclaimtemplates/inference/high-memory/gpu.example.com-metadata.json"
        ),
        "requests[0].name",
    ),
    (
        "DRA112",
        "nic",
        at_path(
            "nic", "plugins/sriov.example.com/dra-device-metadata/default_nic/net/metadata.json"
        ),
        "requests[0].name",
    ),
    ("DRA113", "full", built(_many_attributes), ATTRS),
    ("DRA114", "gpu", replace("gpu", '"podClaimName"', '"podclaimName"'), "podclaimName"),
    ("DRA114", "nic", replace("nic", '"pool"', '"pol"'), f"{DEVICE}.pol"),
    ("DRA114", "nic", replace("nic", '"uid"', '"UID"'), "metadata.UID"),
    ("DRA114", "gpu", replace("gpu", '"int": 0', '"integer": 0'), f"{ATTRS}[index].integer"),
    (
        "DRA114",
        "nic",
        replace("nic", '"interfaceName"', '"mtu": 9000, "interfaceName"'),
        f"{NET}.mtu",
    ),
    ("DRA115", "nic", built(_generation_zero), "metadata.generation"),
    ("DRA115", "nic", replace("nic", '"generation": 1', '"generation": -3'), "metadata.generation"),
    (
        "DRA116",
        "nic",
        replace("nic", '"name": "vf-3",', '"name": "vf-2", "name": "vf-3",'),
        f"{DEVICE}.name",
    ),
    ("DRA117", "nic", replace("nic", '"kind"', '"Kind"'), "Kind"),
    ("DRA117", "nic", replace("nic", '"apiVersion"', '"APIVersion"'), "APIVersion"),
    (
        "DRA118",
        "gpu",
        replace(
            "gpu",
            '"int": 0\n            },\n            "resource',
            '"int": -1\n            },\n            "resource',
        ),
        f"{ATTRS}[{STANDARD}/numaNode]",
    ),
    (
        "DRA118",
        "nic",
        replace("nic", "                1,\n", "                -1,\n"),
        f"{ATTRS}[{STANDARD}/numaNode]",
    ),
    (
        "DRA118",
        "nic",
        replace("nic", "                1,\n", "                1024,\n"),
        f"{ATTRS}[{STANDARD}/numaNode]",
    ),
    (
        "DRA119",
        "gpu",
        replace("gpu", '"0000:3b:00.0"', '"not-a-pci"'),
        f"{ATTRS}[{STANDARD}/pciBusID]",
    ),
    ("DRA119", "gpu", replace("gpu", '"pci0000:3a"', '"0000:3a"'), f"{ATTRS}[{STANDARD}/pcieRoot]"),
]


@pytest.mark.parametrize(
    ("code", "request_name", "make", "field"),
    CASES,
    ids=[f"{case[0]}-{i}" for i, case in enumerate(CASES)],
)
def test_rule_fires_on_its_problem_and_not_on_the_realistic_file(
    sample: Sample, code: str, request_name: str, make: Case, field: str
) -> None:
    """The rule names the bad file's field; the realistic file it came from is clean."""
    good, good_path = sample.file(getattr(sample, request_name))
    assert lint(good, path=good_path) == []
    data, path = make(sample)
    found = codes(data, path)
    assert (code, field) in found, found


def test_every_rule_has_a_case_and_a_description() -> None:
    """RULES lists exactly the codes the cases cover, each described in one line."""
    assert sorted({case[0] for case in CASES}) == sorted(RULES)
    assert all(re.fullmatch(r"DRA1\d\d", code) for code in RULES)
    assert all("\n" not in text for text in RULES.values())


def test_problem_text_is_code_field_message(sample: Sample) -> None:
    """str(problem) is 'CODE field: message', one line, the message saying what to write."""
    data, path = replace("nic", '"hardwareAddress"', '"hwAddress"')(sample)
    (problem,) = lint(data, path=path)
    assert problem == LintProblem(
        "DRA101",
        f"{NET}.hwAddress",
        '"hwAddress" is not a networkData field, readers never see it; use "hardwareAddress"',
    )
    assert str(problem) == f"DRA101 {NET}.hwAddress: {problem.message}"


def test_repeated_problems_in_both_entries_are_reported_once(sample: Sample) -> None:
    """A problem in every entry of the stream is one problem, not one per entry."""
    data, path = replace("nic", '"hardwareAddress"', '"hwAddress"')(sample)
    assert data.count(b"hwAddress") == 2
    assert [p.code for p in lint(data, path=path)] == ["DRA101"]


def test_host_layout_path_of_a_realistic_file_is_clean(sample: Sample) -> None:
    """A node-side file in the kubelet plugin's layout passes the path rules."""
    data, _ = sample.file(sample.sub)
    name = sample.sub.claim.name
    plugin = "/var/lib/kubelet/plugins/gpu.example.com"
    path = f"{plugin}/dra-device-metadata/default_{name}/gpu/metadata.json"
    assert lint(data, path=path) == []


def test_an_undecodable_stream_raises_decode_error() -> None:
    """A stream that does not decode is not linted: DecodeError, as read_file gives."""
    with pytest.raises(dm.DecodeError, match="no metadata objects found"):
        lint(b"  \n")
    with pytest.raises(dm.DecodeError):
        lint(f'{{"kind": "DeviceMetadata", "apiVersion": "{dm.V1BETA1}", "requests": 1}}')


def test_text_and_bytes_give_the_same_problems(sample: Sample) -> None:
    """lint() takes the stream as bytes or as text."""
    data, path = replace("nic", '"ips"', '"ip"')(sample)
    assert lint(data.decode(), path=path) == lint(data, path=path) != []


def test_deeply_nested_and_odd_json_does_not_crash() -> None:
    """Deep nesting, invalid UTF-8 and non-object entries give problems or DecodeError only."""
    head = (
        f'{{"kind": "DeviceMetadata", "apiVersion": "{dm.V1BETA1}", "metadata": {{"generation": 1, '
    )
    deep = head + '"managedFields": [{"fieldsV1": ' + "[" * 5000 + "]" * 5000 + "}]}}\n"
    assert lint(deep.encode()) == []  # Go reads 10000 levels; Python's json gives up sooner
    odd = head.encode() + b'"name": "\xff\xfe"}, "requests": [{"name": "r", "x\xc3": 1}]}\n[]\n5\n'
    found = codes(odd)
    assert ("DRA114", "requests[0].x\ufffd") in found
    assert ("DRA108", "stream[1]") in found


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=300), damaged_streams()), st.sampled_from([None, "a/b", "/"]))
def test_any_bytes_give_problems_or_a_decode_error(data: bytes, path: str | None) -> None:
    """Whatever the bytes, lint() returns LintProblems or raises DecodeError, nothing else."""
    try:
        found = lint(data, path=path)
    except dm.DecodeError:
        return
    assert all(isinstance(p, LintProblem) and p.code in RULES for p in found)


# --- the command line ----------------------------------------------------------------------


def test_cli_prints_path_code_field_message_and_exits_1(sample: Sample, tmp_path: Path) -> None:
    """`dra-metadata lint` prints 'PATH: CODE field: message' per problem and exits 1."""
    data, _ = replace("nic", '"ips"', '"ip"')(sample)
    bad = tmp_path / "resourceclaims/nic/eth/sriov.example.com-metadata.json"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(data)
    good = str(sample.nic.path())
    done = run_cli("lint", good, str(bad))
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f"{good}: no problems",
        f'{bad}: DRA101 {NET}.ip: "ip" is not a networkData field, readers never see it; use "ips"',
    ]
    assert done.stderr == ""
    clean = run_cli("lint", good)
    assert (clean.returncode, clean.stdout) == (0, f"{good}: no problems\n")


def test_cli_exit_codes_worst_wins(
    sample: Sample, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lint exits 0 clean, 1 problems, 65 undecodable, 66 missing; the worst file decides."""
    from dra_metadata._cli import main

    good = str(sample.nic.path())
    bad = tmp_path / "bad-metadata.json"
    bad.write_bytes(sample.nic.encode(versions=[dm.V1ALPHA1]))
    broken = tmp_path / "broken-metadata.json"
    broken.write_bytes(b"{")
    missing = str(tmp_path / "missing-metadata.json")
    assert main(["lint", good]) == 0
    assert main(["lint", good, str(bad)]) == 1
    assert main(["lint", str(broken), str(bad), good]) == 65
    assert main(["lint", missing, str(broken)]) == 66
    # No FILE: the files mounted under the root; none there is every command's not-found.
    assert main(["lint", "--root", str(tmp_path / "no-root")]) == 66
    assert main(["lint", "--no-such-option"]) == 64
    err = capsys.readouterr().err.splitlines()
    assert f"dra-metadata: {broken}: read metadata object from stream: unexpected EOF" in err
    assert f"dra-metadata: open metadata file: open {missing}: no such file or directory" in err


# --- the custom-driver example and the docs -------------------------------------------------


def test_custom_driver_example_writes_what_the_kit_writes(tmp_path: Path) -> None:
    """examples/custom_driver.py writes the kubelet plugin's bytes, 0644, and lints clean."""
    done = subprocess.run(
        [sys.executable, "examples/custom_driver.py", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("dra-metadata lint: no problems") == 2
    written = tmp_path / "sriov.example.com/dra-device-metadata/default_nic/eth/metadata.json"
    assert written.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in written.parent.iterdir()] == ["metadata.json"]  # no temp file left
    tree = MetadataTree(tmp_path / "kit")
    claim = tree.claim("nic", uid="7d6c5b4a-3928-4716-a5b4-c3d2e1f0a9b8")
    claim.request("eth").device(
        "sriov.example.com",
        "node-a",
        "vf-3",
        pfName="enp94s0f0",
        vfIndex=3,
        attributes={f"{STANDARD}/pciBusID": "0000:5e:00.3"},
    ).network(interface_name="net1", ips=["10.20.30.41/24"], hardware_address="52:54:00:ab:cd:03")
    assert written.read_bytes() == claim.request("eth").encode(generation=2)


def test_docs_list_every_rule() -> None:
    """The docs' table of lint codes (docs/testing.md) is RULES, row for row."""
    page = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (DRA\d+) \| (.*) \|$", page, re.MULTILINE)
    assert rows == list(RULES.items())


def test_a_standard_attribute_name_under_a_domain_that_merely_ends_in_k8s_io_is_not_flagged(
    tmp_path: Path,
) -> None:
    """DRA103 is for Kubernetes domains (``k8s.io`` and its subdomains), not ``acmek8s.io``."""
    device = dm.Device(
        "gpu.example.com",
        "p",
        "gpu-0",
        attributes={"acmek8s.io/numaNode": dm.DeviceAttribute(int=0)},
    )
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("gpu", (device,)),))
    assert [p.code for p in lint(dm.encode(md)) if p.code == "DRA103"] == []
    device = dm.Device(
        "gpu.example.com",
        "p",
        "gpu-0",
        attributes={"dra.k8s.io/numaNode": dm.DeviceAttribute(int=0)},
    )
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("gpu", (device,)),))
    assert [p.code for p in lint(dm.encode(md)) if p.code == "DRA103"] == ["DRA103"]
