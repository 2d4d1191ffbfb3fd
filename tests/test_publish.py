"""The publisher: the node files and CDI specs a driver writes, as the Go kubelet plugin does.

The first three groups port the upstream writer tests (``kubeletplugin/metadata_test.go``:
prepare, cleanup, update) with their driver, claim and cases; the rest pin down the
bytes, the write mechanics and the refusals.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO

DRIVER = "example.com"
CLAIM = dm.ClaimRef(name="my-claim", namespace="default", uid="1234-claim-uid")
REQUEST = "gpu-request"


@pytest.fixture
def pub(tmp_path: Path) -> dm.MetadataPublisher:
    """A publisher for example.com writing under tmp_path/plugin and tmp_path/cdi."""
    return dm.MetadataPublisher(
        DRIVER, plugin_data_dir=tmp_path / "plugin", cdi_dir=tmp_path / "cdi"
    )


def string_attrs(**values: str) -> dict[str, dm.DeviceAttribute]:
    """String attributes, as the upstream tests build them."""
    return {key: dm.DeviceAttribute(string=value) for key, value in values.items()}


def host_file(pub: dm.MetadataPublisher, claim: dm.ClaimRef, base: str) -> Path:
    """The node file of a base request, spelled out as the Go test spells it."""
    directory = f"{claim.namespace}_{claim.name}"
    return Path(pub.plugin_data_dir, "dra-device-metadata", directory, base, "metadata.json")


def cdi_file(pub: dm.MetadataPublisher, claim: dm.ClaimRef, base: str) -> Path:
    """The CDI spec file of a base request, spelled out."""
    return Path(pub.cdi_dir, f"{DRIVER}_metadata_{claim.uid}_{base}.json")


def expected_object(
    request: str,
    devices: list[dm.Device],
    *,
    generation: int = 1,
    pod_claim_name: str | None = None,
) -> dm.DeviceMetadata:
    """The object upstream expects in a file: the claim's identity and one request."""
    return dm.DeviceMetadata(
        api_version=dm.V1BETA1,
        metadata=dm.ObjectMeta(
            name=CLAIM.name, namespace=CLAIM.namespace, uid=CLAIM.uid, generation=generation
        ),
        pod_claim_name=pod_claim_name,
        requests=(dm.DeviceMetadataRequest(request, tuple(devices)),),
    )


# --- prepare (upstream TestProcessPreparedClaim) --------------------------------------------

#: request, pool, device name, attributes, network data of each device, per upstream case.
PrepareCase = list[tuple[str, str, str, dict[str, dm.DeviceAttribute], dm.NetworkDeviceData | None]]
PREPARE_CASES: dict[str, PrepareCase] = {
    "with-metadata": [
        ("gpu-request", "node-1", "gpu-0", string_attrs(pciBusID="0000:03:00.0"), None)
    ],
    "without-metadata-deferred": [("gpu-request", "node-1", "gpu-0", {}, None)],
    "network-device-data": [
        (
            "gpu-request",
            "node-1",
            "vf-0",
            {},
            dm.NetworkDeviceData(interface_name="eth0", ips=("10.0.0.5/24",)),
        )
    ],
    "multiple-requests": [
        ("gpu-request", "node-1", "gpu-0", {}, None),
        ("nic-request", "node-1", "nic-0", {}, None),
    ],
    "subrequest": [
        ("gpu-request/high-memory", "node-1", "gpu-0", string_attrs(memoryGB="80"), None)
    ],
}


@pytest.mark.parametrize("case", PREPARE_CASES, ids=str)
def test_prepare_writes_the_file_and_cdi_spec_of_each_request(
    pub: dm.MetadataPublisher, case: str
) -> None:
    """Each request gets its node file (generation 1), its CDI spec and its CDI device ID."""
    by_request: dict[str, list[dm.Device]] = {}
    for request, pool, name, attributes, network in PREPARE_CASES[case]:
        device = pub.device(pool, name, attributes=attributes, network_data=network)
        by_request.setdefault(request, []).append(device)
    for request, devices in by_request.items():
        base = request.partition("/")[0]
        assert pub.prepare(CLAIM, request, devices) == f"{DRIVER}/metadata={CLAIM.uid}_{base}"
        path = host_file(pub, CLAIM, base)
        assert dm.read_file(path) == expected_object(request, devices)
        spec = json.loads(cdi_file(pub, CLAIM, base).read_text())
        assert spec == {
            "cdiVersion": "0.5.0",  # the device name starts with a digit
            "kind": f"{DRIVER}/metadata",
            "devices": [
                {
                    "name": f"{CLAIM.uid}_{base}",
                    "containerEdits": {
                        "mounts": [
                            {
                                "hostPath": str(path),
                                "containerPath": "/var/run/kubernetes.io/dra-device-attributes"
                                f"/resourceclaims/my-claim/{base}/{DRIVER}-metadata.json",
                                "options": ["ro", "bind"],
                            }
                        ]
                    },
                }
            ],
            "containerEdits": {},  # Go's Spec type always has it (tests/goref/test_writer.py)
        }


def test_prepare_with_pod_claim_name_annotation(pub: dm.MetadataPublisher) -> None:
    """A template's claim records podClaimName and is mounted under resourceclaimtemplates/."""
    claim = dm.ClaimRef(
        name=CLAIM.name, namespace=CLAIM.namespace, uid=CLAIM.uid, pod_claim_name="my-gpu"
    )
    device = pub.device("node-1", "gpu-0", attributes=string_attrs(model="A100"))
    pub.prepare(claim, REQUEST, [device])
    assert dm.read_file(host_file(pub, claim, REQUEST)) == expected_object(
        REQUEST, [device], pod_claim_name="my-gpu"
    )
    (mount,) = json.loads(cdi_file(pub, claim, REQUEST).read_text())["devices"][0][
        "containerEdits"
    ]["mounts"]
    assert mount["containerPath"] == (
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/my-gpu/"
        f"{REQUEST}/{DRIVER}-metadata.json"
    )


def test_an_empty_pod_claim_annotation_is_refused_as_the_readers_refuse_it(
    pub: dm.MetadataPublisher,
) -> None:
    """podClaimName "" does not validate: prepare() refuses it and writes nothing.

    The path it would mount at is still the resourceclaims/ one (no pod claim name).
    """
    claim = dm.ClaimRef(name="c", namespace="ns", uid="u1", pod_claim_name="")
    assert "/resourceclaims/c/r/" in pub.container_path(claim, "r")
    with pytest.raises(dm.PublishError, match=r"readers would refuse the file: podClaimName"):
        pub.prepare(claim, "r", [pub.device("p", "d")])
    assert not Path(pub.plugin_data_dir).exists()


# --- cleanup (upstream TestCleanupClaim) ---------------------------------------------------

#: requests prepared (with attributes), whether to clean up twice, the claim cleaned up.
CleanupCase = tuple[list[tuple[str, dict[str, dm.DeviceAttribute]]], bool, dm.ClaimRef]
CLEANUP_CASES: dict[str, CleanupCase] = {
    "removes-files": ([(REQUEST, string_attrs(pciBusID="0000:03:00.0"))], False, CLAIM),
    "nonexistent-claim-is-noop": (
        [],
        False,
        dm.ClaimRef(name="no-claim", namespace="no-ns", uid="unknown-uid"),
    ),
    "idempotent": ([(REQUEST, string_attrs(pciBusID="0000:03:00.0"))], True, CLAIM),
    "multiple-requests": ([("gpu-request", {}), ("nic-request", {})], False, CLAIM),
    "subrequest": ([("gpu-request/high-memory", {})], False, CLAIM),
}


@pytest.mark.parametrize("case", CLEANUP_CASES, ids=str)
def test_unprepare_removes_the_claim_directory_and_cdi_specs(
    pub: dm.MetadataPublisher, case: str
) -> None:
    """After unprepare neither the claim's node directory nor any of its CDI specs is left."""
    requests, clean_first, claim = CLEANUP_CASES[case]
    for request, attributes in requests:
        pub.prepare(CLAIM, request, [pub.device("node-1", "gpu-0", attributes=attributes)])
    if clean_first:
        pub.unprepare(claim)
    pub.unprepare(claim)
    assert not Path(pub.claim_dir(claim)).exists()
    for request, _ in requests:
        assert not cdi_file(pub, claim, request.partition("/")[0]).exists()


def test_unprepare_leaves_other_claims_and_drivers_alone(tmp_path: Path) -> None:
    """Only this claim's files go: another claim's, and another driver's specs for it, stay."""
    gpu = dm.MetadataPublisher(DRIVER, plugin_data_dir=tmp_path / "p1", cdi_dir=tmp_path / "cdi")
    nic = dm.MetadataPublisher(
        "nic.example.com", plugin_data_dir=tmp_path / "p2", cdi_dir=tmp_path / "cdi"
    )
    other = dm.ClaimRef(name="other", namespace="default", uid="1234-claim-uid-2")
    gpu.prepare(CLAIM, "r", [gpu.device("p", "d")])
    gpu.prepare(other, "r", [gpu.device("p", "d")])
    nic.prepare(CLAIM, "r", [nic.device("p", "d")])
    gpu.unprepare(CLAIM)
    assert sorted(os.listdir(tmp_path / "cdi")) == [
        ".example.com_metadata_1234-claim-uid-2.lock",  # the locks of the claims still prepared
        ".nic.example.com_metadata_1234-claim-uid.lock",
        "example.com_metadata_1234-claim-uid-2_r.json",
        "nic.example.com_metadata_1234-claim-uid_r.json",
    ]
    assert Path(gpu.metadata_path(other, "r")).exists()
    assert Path(nic.metadata_path(CLAIM, "r")).exists()


# --- update (upstream TestUpdateRequestMetadata) -------------------------------------------


def test_update_rewrites_the_file_with_the_next_generation(pub: dm.MetadataPublisher) -> None:
    """updates-file-and-generation: the devices now carry their metadata, generation 2."""
    pub.prepare(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    later = [pub.device("node-1", "gpu-0", attributes=string_attrs(pciBusID="0000:03:00.0"))]
    written = pub.update(CLAIM, REQUEST, later)
    expected = expected_object(REQUEST, later, generation=2)
    assert dm.read_file(host_file(pub, CLAIM, REQUEST)) == expected
    assert written.metadata.generation == 2
    assert written.requests == expected.requests


@pytest.mark.parametrize(
    ("prepared", "claim", "request_name"),
    [
        (False, dm.ClaimRef(name="my-claim", namespace="default", uid="unknown-uid"), REQUEST),
        (True, CLAIM, "nonexistent-request"),
    ],
    ids=["unknown-claim", "unknown-request"],
)
def test_update_of_what_was_not_prepared_is_not_found(
    pub: dm.MetadataPublisher, prepared: bool, claim: dm.ClaimRef, request_name: str
) -> None:
    """unknown-claim / unknown-request: MetadataNotFoundError, in Go's words."""
    if prepared:
        pub.prepare(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    with pytest.raises(dm.MetadataNotFoundError) as err:
        pub.update(claim, request_name, [pub.device("node-1", "gpu-0")])
    assert str(err.value) == (
        f'request "{request_name}" not found in prepared claim default/my-claim'
    )
    assert not Path(pub.metadata_path(claim, request_name)).exists()


def test_update_of_what_was_not_prepared_leaves_the_cdi_directory_alone(tmp_path: Path) -> None:
    """A failing update does not touch the CDI lock: held elsewhere, the answer is still at once.

    (Taken first, its lock file showed in the CDI directory while the update failed,
    just after an unprepare had left it empty.)
    """
    pub = dm.MetadataPublisher(
        DRIVER, plugin_data_dir=tmp_path / "plugin", cdi_dir=tmp_path / "cdi", lock_timeout=5
    )
    other = dm.ClaimRef(name="other", namespace="default", uid="other-uid")
    pub.prepare(other, REQUEST, [pub.device("node-1", "gpu-0")])
    pub.prepare(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    pub.unprepare(CLAIM)
    before = sorted(os.listdir(pub.cdi_dir))
    with open(pub.cdi_lock_path(CLAIM), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(dm.MetadataNotFoundError):
            pub.update(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
        assert time.monotonic() - started < 2
    os.unlink(pub.cdi_lock_path(CLAIM))
    assert sorted(os.listdir(pub.cdi_dir)) == before


def test_update_increments_the_generation_every_time(pub: dm.MetadataPublisher) -> None:
    """increments-generation-multiple-times: two updates before the checked one give 4."""
    pub.prepare(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    devices = [pub.device("node-1", "gpu-0", attributes=string_attrs(pciBusID="0000:03:00.0"))]
    for mode in ("replace", "in-place"):
        pub.update(CLAIM, REQUEST, devices, mode=mode)
    pub.update(CLAIM, REQUEST, devices)
    assert dm.read_file(host_file(pub, CLAIM, REQUEST)).metadata.generation == 4


def test_update_of_a_subrequest_writes_the_base_request_file(pub: dm.MetadataPublisher) -> None:
    """subrequest-update: the base request's file, the full request name inside, generation 2."""
    ref = f"{REQUEST}/high-memory"
    pub.prepare(CLAIM, ref, [pub.device("node-1", "gpu-0")])
    later = [pub.device("node-1", "gpu-0", attributes=string_attrs(pciBusID="0000:03:00.0"))]
    pub.update(CLAIM, ref, later)
    assert dm.read_file(host_file(pub, CLAIM, REQUEST)) == expected_object(ref, later, generation=2)


def test_update_keeps_the_files_pod_claim_name_and_replaces_the_devices(
    pub: dm.MetadataPublisher,
) -> None:
    """As Go: podClaimName comes from the file, not the call; the device list is replaced."""
    template = dm.ClaimRef(name="c", namespace="ns", uid="u1", pod_claim_name="gpu")
    pub.prepare(template, "gpu", [pub.device("p", "gpu-0"), pub.device("p", "gpu-1")])
    plain = dm.ClaimRef(name="c", namespace="ns", uid="u1")
    md = pub.update(plain, "gpu", [pub.device("p", "gpu-1")])
    assert md.pod_claim_name == "gpu"
    on_disk = dm.read_file(pub.metadata_path(template, "gpu"))
    assert on_disk.pod_claim_name == "gpu"
    assert [d.name for d in on_disk.requests[0].devices] == ["gpu-1"]
    assert pub.update(plain, "gpu", []).requests[0].devices == ()


def test_update_over_a_torn_file_continues_above_the_highest_generation(
    pub: dm.MetadataPublisher,
) -> None:
    """A file left empty or torn (an in-place write cut short): the state says where it was."""
    pub.prepare(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    pub.update(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    path = Path(pub.metadata_path(CLAIM, REQUEST))
    path.write_bytes(b"{broken")
    assert pub.update(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")]).metadata.generation == 3
    assert dm.read_file(path).metadata.generation == 3


def test_update_of_a_file_without_state_that_does_not_decode_is_a_decode_error(
    pub: dm.MetadataPublisher,
) -> None:
    """A file from before the state was kept is read for its generation: broken, DecodeError."""
    pub.prepare(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    os.unlink(pub.state_path(CLAIM))
    path = Path(pub.metadata_path(CLAIM, REQUEST))
    path.write_bytes(b"{broken")
    with pytest.raises(
        dm.DecodeError,
        match=r'^update default/my-claim request "gpu-request": decode existing metadata: '
        r".*metadata\.json: ",
    ):
        pub.update(CLAIM, REQUEST, [pub.device("node-1", "gpu-0")])
    assert path.read_bytes() == b"{broken"
    assert not os.path.exists(pub.lock_path(CLAIM))  # not prepared by this publisher: no lock


# --- the bytes --------------------------------------------------------------------------------


def test_the_file_is_encode_of_the_object_in_the_configured_versions(tmp_path: Path) -> None:
    """The node file is byte for byte encode() of the object, versions in the order given."""
    for run, versions in enumerate(([dm.V1BETA1, dm.V1ALPHA1], [dm.V1BETA1])):
        pub = dm.MetadataPublisher(
            DRIVER,
            plugin_data_dir=tmp_path / f"p{run}",
            cdi_dir=tmp_path / f"c{run}",
            versions=versions,
        )
        devices = [pub.device("n", "gpu-0", attributes=string_attrs(b="<&>", a="é"))]
        pub.prepare(CLAIM, "r", devices)
        data = Path(pub.metadata_path(CLAIM, "r")).read_bytes()
        assert data == dm.encode(pub.metadata(CLAIM, "r", devices), versions)
        assert data.count(b'"apiVersion"') == len(versions)


def test_the_cdi_spec_is_go_indented_json_without_a_final_newline(
    pub: dm.MetadataPublisher,
) -> None:
    """The CDI spec has Go's MarshalIndent form: two-space indent, cdiVersion first, no newline."""
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    text = cdi_file(pub, CLAIM, "r").read_text()
    assert text == json.dumps(pub.cdi_spec(CLAIM, "r"), indent=2)
    assert text.startswith('{\n  "cdiVersion": "0.5.0",\n  "kind": "example.com/metadata",\n')
    assert not text.endswith("\n")


@pytest.mark.parametrize(
    ("uid", "version"),
    [("1234-claim-uid", "0.5.0"), ("c7e7a1b2-0000-4000-8000-000000000001", "0.3.0")],
)
def test_cdi_version_is_the_lowest_the_spec_needs(
    pub: dm.MetadataPublisher, uid: str, version: str
) -> None:
    """A device name starting with a digit needs CDI 0.5.0; one starting with a letter 0.3.0."""
    claim = dm.ClaimRef(name="c", namespace="ns", uid=uid)
    assert pub.cdi_spec(claim, "r")["cdiVersion"] == version


def test_files_are_0644_and_directories_0755_whatever_the_umask(
    pub: dm.MetadataPublisher,
) -> None:
    """Node files and CDI specs are 0644; every directory the publisher makes is 0755."""
    old = os.umask(0o077)
    try:
        pub.prepare(CLAIM, "r", [pub.device("n", "d")])
        pub.update(CLAIM, "r", [pub.device("n", "d")], mode="in-place")
    finally:
        os.umask(old)
    for path in (Path(pub.metadata_path(CLAIM, "r")), cdi_file(pub, CLAIM, "r")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    directory = Path(pub.metadata_path(CLAIM, "r")).parent
    while directory != Path(pub.plugin_data_dir).parent:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o755, directory
        directory = directory.parent
    assert stat.S_IMODE(Path(pub.cdi_dir).stat().st_mode) == 0o755


def test_replace_gives_a_new_inode_and_in_place_keeps_it(pub: dm.MetadataPublisher) -> None:
    """mode="replace" renames a new file over the old; mode="in-place" writes the same inode."""
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    path = Path(pub.metadata_path(CLAIM, "r"))
    first = path.stat().st_ino
    with open(path, "rb") as held:  # a reader (or a bind mount) holding the old file
        pub.update(CLAIM, "r", [pub.device("n", "d")])
        assert path.stat().st_ino != first
        assert dm.decode(held.read()).metadata.generation == 1
    second = path.stat().st_ino
    pub.update(CLAIM, "r", [pub.device("n", "d")], mode="in-place")
    assert path.stat().st_ino == second
    assert dm.read_file(path).metadata.generation == 3
    assert sorted(os.listdir(path.parent)) == ["metadata.json"]


def test_defaults_are_the_kubelet_plugin_paths_and_versions() -> None:
    """By default: /var/lib/kubelet/plugins/<driver>, /var/run/cdi, v1beta1 then v1alpha1."""
    pub = dm.MetadataPublisher("gpu.example.com")
    assert pub.plugin_data_dir == "/var/lib/kubelet/plugins/gpu.example.com"
    assert pub.cdi_dir == "/var/run/cdi"
    assert pub.versions == (dm.V1BETA1, dm.V1ALPHA1)
    relative = dm.MetadataPublisher("gpu.example.com", plugin_data_dir="p", cdi_dir="c")
    assert relative.plugin_data_dir == os.path.join(os.getcwd(), "p")  # CDI needs absolute paths
    assert relative.cdi_dir == os.path.join(os.getcwd(), "c")


def test_claim_ref_from_a_resource_claim_object() -> None:
    """ClaimRef.from_resource_claim reads name, namespace, UID and the pod-claim-name annotation."""
    claim = {"metadata": {"name": "n", "namespace": "ns", "uid": "u1"}}
    assert dm.ClaimRef.from_resource_claim(claim) == dm.ClaimRef(name="n", namespace="ns", uid="u1")
    with pytest.raises(dm.InvalidNameError, match="metadata object"):
        dm.ClaimRef.from_resource_claim({"kind": "ResourceClaim"})
    with pytest.raises(dm.InvalidNameError, match="namespace name must not be empty"):
        dm.ClaimRef.from_resource_claim({"metadata": {"name": "n", "uid": "u"}})


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        ([], "metadata versions must be explicitly selected, none chosen"),
        ([dm.V1ALPHA1], "the latest metadata version is metadata.resource.k8s.io/v1beta1"),
        (["bogus/v99", dm.V1BETA1], 'metadata version "bogus/v99" is not supported'),
        (dm.V1BETA1, "versions must be a list of API versions"),
        ([dm.V1ALPHA1, dm.V1BETA1], "metadata versions must be listed newest first"),
    ],
    ids=["none", "no-v1beta1", "unknown", "one-string", "oldest-first"],
)
def test_versions_are_checked_as_the_kubelet_plugin_checks_them(
    versions: list[str], message: str
) -> None:
    """Versions must be named, known, and include v1beta1 (Go v1.37's EnableDeviceMetadata)."""
    with pytest.raises(dm.PublishError, match=message):
        dm.MetadataPublisher(DRIVER, versions=versions)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: dm.ClaimRef(name="..", namespace="ns", uid="u"), "would leave its directory"),
        (lambda: dm.ClaimRef(name="c", namespace="a/b", uid="u"), "contains '/'"),
        (lambda: dm.ClaimRef(name="c", namespace="ns", uid=""), "claim UID name must not be empty"),
        (lambda: dm.ClaimRef(name=".", namespace="ns", uid="u"), "would leave its directory"),
        (
            lambda: dm.ClaimRef(name="c", namespace="ns", uid="u", pod_claim_name="x\x00"),
            "NUL",
        ),
        (lambda: dm.MetadataPublisher("-gpu.example.com"), "not one Kubernetes gives"),
        (lambda: dm.MetadataPublisher("1gpu.example.com"), "cannot be the vendor of a CDI kind"),
        (lambda: dm.MetadataPublisher("Gpu.Example.com"), "a lower-case DNS subdomain"),
        (lambda: dm.MetadataPublisher("g" * 64), "no more than 63 characters"),
        (lambda: dm.MetadataPublisher("../etc"), "contains '/'"),
    ],
)
def test_unsafe_names_are_refused_before_anything_is_written(make: object, message: str) -> None:
    """Names that would leave their directory, or that CDI cannot hold, are InvalidNameError."""
    assert callable(make)
    with pytest.raises(dm.InvalidNameError, match=message):
        make()


@pytest.mark.parametrize(
    ("claim", "request_name", "message"),
    [
        (CLAIM, "a/b/c", "more than one '/'"),
        (CLAIM, "../x", "would leave its directory"),
        (CLAIM, "", "request name must not be empty"),
        (dm.ClaimRef(name="c", namespace="ns", uid="u!x"), "r", "claim UID name 'u!x' is not one"),
        (CLAIM, "r-", "request name 'r-' is not one Kubernetes gives"),
        (CLAIM, "gpu/High", "subrequest name 'High' is not one Kubernetes gives"),
        (dm.ClaimRef(name="a_b", namespace="ns", uid="u"), "r", "claim name 'a_b' is not one"),
        (dm.ClaimRef(name="b", namespace="n_s", uid="u"), "r", "namespace name 'n_s' is not one"),
        (dm.ClaimRef(name="b", namespace="ns", uid="u_1"), "r", "claim UID name 'u_1' is not one"),
        (dm.ClaimRef(name="b", namespace="ns", uid="u"), "r_1", "request name 'r_1' is not one"),
        (dm.ClaimRef(name="b\udcff", namespace="ns", uid="u"), "r", "is not one Kubernetes"),
    ],
)
def test_bad_requests_and_uids_are_refused_and_nothing_is_written(
    pub: dm.MetadataPublisher, claim: dm.ClaimRef, request_name: str, message: str
) -> None:
    """prepare() refuses a bad request name or a UID that makes a bad CDI name; no file appears."""
    with pytest.raises(dm.InvalidNameError, match=message):
        pub.prepare(claim, request_name, [pub.device("n", "d")])
    assert not Path(pub.plugin_data_dir).exists()
    assert not Path(pub.cdi_dir).exists()


#: Request names no Kubernetes object has, each once refused with a bare InvalidNameError
#: or a TypeError from a message formatter.
BAD_REQUESTS: list[object] = [
    "..",
    ".",
    "a/b/c",
    "a\0b",
    "",
    "/",
    "gpu/",
    "/gpu",
    "gpu/..",
    None,
    5,
]


@pytest.mark.parametrize("request_name", BAD_REQUESTS, ids=repr)
def test_every_call_refuses_a_bad_request_name_with_a_publish_error_naming_it(
    pub: dm.MetadataPublisher, request_name: str
) -> None:
    """Every call and path helper: a PublishError that is an InvalidNameError, the value named."""
    gpu = pub.device("n", "d")
    pub.prepare(CLAIM, "gpu", [gpu])
    calls: dict[str, Callable[[], object]] = {
        "prepare": lambda: pub.prepare(CLAIM, request_name, [gpu]),
        "update": lambda: pub.update(CLAIM, request_name, [gpu]),
        "write_bytes": lambda: pub.write_bytes(CLAIM, request_name, b"{}"),
        "remove_request": lambda: pub.remove_request(CLAIM, request_name),
        "metadata": lambda: pub.metadata(CLAIM, request_name, [gpu]),
        "metadata_path": lambda: pub.metadata_path(CLAIM, request_name),
        "container_path": lambda: pub.container_path(CLAIM, request_name),
        "cdi_device": lambda: pub.cdi_device(CLAIM, request_name),
        "cdi_spec_path": lambda: pub.cdi_spec_path(CLAIM, request_name),
        "cdi_spec": lambda: pub.cdi_spec(CLAIM, request_name),
    }
    refused = {}
    for name, call in calls.items():
        with pytest.raises(dm.PublishError) as err:
            call()
        refused[name] = isinstance(err.value, dm.InvalidNameError) and (
            repr(request_name) in str(err.value)
        )
    assert refused == dict.fromkeys(calls, True)
    assert dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation == 1


@pytest.mark.parametrize("field", ["name", "namespace", "uid", "pod_claim_name"])
@pytest.mark.parametrize("value", [None, 5, "..", "a/b", "a\0b"], ids=repr)
def test_a_claim_ref_refuses_a_bad_name_with_a_publish_error_naming_it(
    field: str, value: object
) -> None:
    """ClaimRef(name=None) and the rest: both a PublishError and an InvalidNameError."""
    names: dict[str, object] = {"name": "c", "namespace": "ns", "uid": "u", field: value}
    if field == "pod_claim_name" and value is None:
        return  # no annotation: a claim not made from a template
    with pytest.raises(dm.PublishError) as err:
        dm.ClaimRef(**names)  # type: ignore[arg-type]
    assert isinstance(err.value, dm.InvalidNameError)
    assert repr(value) in str(err.value)


def test_bad_devices_are_refused_and_nothing_is_written(pub: dm.MetadataPublisher) -> None:
    """Another driver's device, no devices, or not Device objects: PublishError, no file."""
    cases = [
        ([dm.Device("other.example.com", "n", "d")], "is from driver 'other.example.com'"),
        ([], "has no devices"),
        ([{"pool": "n", "name": "d"}], "must be Device objects"),
        (pub.device("n", "d"), "must be a list of Device objects"),
    ]
    for devices, message in cases:
        with pytest.raises(dm.PublishError, match=message):
            pub.prepare(CLAIM, "r", devices)  # type: ignore[arg-type]  # wrong on purpose
    with pytest.raises(dm.PublishError, match="claim must be a ClaimRef"):
        pub.prepare("my-claim", "r", [pub.device("n", "d")])  # type: ignore[arg-type]
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    with pytest.raises(dm.PublishError, match="mode must be one of replace, in-place"):
        pub.update(CLAIM, "r", [pub.device("n", "d")], mode="rename")  # type: ignore[arg-type]
    assert dm.read_file(pub.metadata_path(CLAIM, "r")).metadata.generation == 1


# --- crash safety -------------------------------------------------------------------------------


def leftovers(root: str) -> list[str]:
    """Every temporary file under root (the publisher's are .<name>.<random>.tmp)."""
    return [
        os.path.join(parent, name)
        for parent, _, names in os.walk(root)
        for name in names
        if name.endswith(".tmp")
    ]


def test_a_device_that_cannot_be_encoded_writes_nothing(pub: dm.MetadataPublisher) -> None:
    """A value encode() cannot write is a PublishError before any file or directory is made."""
    bad = dm.Device(DRIVER, "n", "d", attributes={"x": object()})  # type: ignore[dict-item]
    with pytest.raises(dm.PublishError, match=r'^prepare default/my-claim request "r": encode '):
        pub.prepare(CLAIM, "r", [bad])
    assert not Path(pub.plugin_data_dir).exists()
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    before = Path(pub.metadata_path(CLAIM, "r")).read_bytes()
    with pytest.raises(dm.PublishError, match=r'^update default/my-claim request "r": encode '):
        pub.update(CLAIM, "r", [bad])
    assert Path(pub.metadata_path(CLAIM, "r")).read_bytes() == before


def test_a_failed_rename_leaves_no_temporary_file(pub: dm.MetadataPublisher) -> None:
    """When the target cannot be replaced (a directory is there) the temp file is removed."""
    target = Path(pub.metadata_path(CLAIM, "r"))
    (target / "occupied").mkdir(parents=True)
    with pytest.raises(
        dm.PublishError,
        match=r"metadata\.json: a directory where the request's metadata file belongs, .*rm -r ",
    ) as err:
        pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    assert err.value.path == str(target)
    assert leftovers(pub.plugin_data_dir) == []
    assert os.listdir(pub.cdi_dir) == []  # the spec is only written for a file that exists


def test_a_write_that_fails_midway_leaves_no_temporary_file_and_the_old_file(
    tmp_path: Path,
) -> None:
    """A real short write (file size limit, EFBIG) mid-update: old file intact, no temp left."""
    script = textwrap.dedent(
        f"""
        import os, resource, signal, sys
        sys.path.insert(0, {str(REPO)!r})
        import dra_metadata as dm
        pub = dm.MetadataPublisher("example.com", plugin_data_dir={str(tmp_path / "p")!r},
                                   cdi_dir={str(tmp_path / "c")!r})
        claim = dm.ClaimRef(name="c", namespace="ns", uid="u1")
        pub.prepare(claim, "r", [pub.device("n", "d")])
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
        big = {{"k": dm.DeviceAttribute(string="x" * 8192)}}
        for mode in ("replace", "in-place"):
            try:
                pub.update(claim, "r", [pub.device("n", "d", attributes=big)], mode=mode)
            except dm.PublishError as err:
                print(mode, type(err.__cause__).__name__, err.__cause__.errno)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    # EFBIG (27): each write was cut short by the file size limit.
    assert done.stdout.splitlines() == ["replace OSError 27", "in-place OSError 27"]
    assert leftovers(str(tmp_path)) == []
    # In place is not atomic (as in Go v1.36): the file holds what fit. Replace left it whole
    # until then, which the first line shows: the update after it still read generation 1.
    assert (tmp_path / "p/dra-device-metadata/ns_c/r/metadata.json").stat().st_size == 4096


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory nobody may write: mode 0555, and for root a read-only bind mount on itself."""
    directory = tmp_path / "cdi"
    directory.mkdir()
    if os.geteuid() != 0:
        os.chmod(directory, 0o555)
        yield directory
        os.chmod(directory, 0o755)
        return
    done = subprocess.run(["mount", "--bind", str(directory), str(directory)], check=False)
    if done.returncode != 0:
        pytest.skip("a read-only bind mount cannot be made here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], check=True)
        yield directory
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def test_a_read_only_directory_is_a_publish_error(tmp_path: Path, read_only_dir: Path) -> None:
    """A CDI directory that cannot be written: PublishError naming the file that failed."""
    pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=tmp_path / "p", cdi_dir=read_only_dir)
    with pytest.raises(
        dm.PublishError,
        match=r'^prepare default/my-claim request "r": '
        r".*/cdi/\.example\.com_metadata_1234-claim-uid\.lock: "
        r"(read-only|permission)",
    ):
        pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    assert os.listdir(read_only_dir) == []


def test_unprepare_of_a_claim_never_prepared_on_read_only_directories_does_nothing(
    tmp_path: Path,
) -> None:
    """A node with another claim prepared, made read-only: unprepare(other) writes nothing.

    It finds no lock, no state and no claim directory, and makes none (it used to make
    the lock file, and fail). A prepare there fails with the file system's reason.
    """
    node = tmp_path / "node"
    pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=node / "p", cdi_dir=node / "cdi")
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    never = dm.ClaimRef(name="never", namespace="default", uid="u-never")
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    if subprocess.run(["mount", "--bind", str(node), str(node)], check=False).returncode:
        pytest.skip("a read-only bind mount cannot be made here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(node)], check=True)
        before = sorted(str(p) for p in node.rglob("*"))
        pub.unprepare(never)  # no error, and nothing made
        assert sorted(str(p) for p in node.rglob("*")) == before
        with pytest.raises(dm.PublishError, match="read-only file system"):
            pub.prepare(never, "r", [pub.device("n", "d")])
    finally:
        subprocess.run(["umount", str(node)], check=True)
    pub.unprepare(CLAIM)


# --- what is accepted is what the readers accept ------------------------------------------------


def test_plain_values_are_converted_as_the_testing_kit_converts_them(
    pub: dm.MetadataPublisher,
) -> None:
    """{"uuid": "GPU-1", "index": 0} is a string and an int: the file decodes, validates, lints."""
    from dra_metadata.testing import to_attribute

    values: dict[str, object] = {"uuid": "GPU-1", "index": 0, "ok": True, "ids": [1, 2]}
    device = pub.device("n", "gpu-0", attributes=values)  # type: ignore[arg-type]
    assert device.attributes == {k: to_attribute(v) for k, v in values.items()}  # type: ignore[arg-type]
    pub.prepare(CLAIM, "r", [device])
    data = Path(pub.metadata_path(CLAIM, "r")).read_bytes()
    md = dm.decode(data)
    assert md.requests[0].devices[0].attribute("index") == 0
    assert dm.validate(md) == []
    assert dm.lint(data) == []


@pytest.mark.parametrize(
    ("attributes", "network", "error", "message"),
    [
        ({"i": 2**63}, None, dm.PublishError, "does not fit in 64 bits"),
        ({"i": -(2**63) - 1}, None, dm.PublishError, "does not fit in 64 bits"),
        ({"i": dm.DeviceAttribute(int=2**63)}, None, dm.PublishError, "could not decode"),
        ({"i": dm.DeviceAttribute(int=True)}, None, dm.PublishError, "could not decode"),
        ({"s": dm.DeviceAttribute(string=5)}, None, dm.PublishError, "could not decode"),  # type: ignore[arg-type]
        ({"s": object()}, None, TypeError, "cannot make a device attribute of object"),
        ({"s": []}, None, dm.PublishError, "an empty list has no kind"),
        ({"s": "\udcff"}, None, dm.PublishError, "would not read back as given"),
        ({"s": ["x" * 65]}, None, dm.PublishError, "readers would refuse the file"),
        ({}, dm.NetworkDeviceData(ips="10.0.0.1"), dm.PublishError, "could not decode"),  # type: ignore[arg-type]
        ({}, dm.NetworkDeviceData(ips=("10.0.0.1/8",) * 17), dm.PublishError, "Too many: 17"),
        ({}, {"ips": []}, TypeError, "network_data must be a NetworkDeviceData"),
    ],
    ids=[
        "int-2^63",
        "int-below-min",
        "attribute-2^63",
        "int=True",
        "string=5",
        "object",
        "empty-list",
        "lone-surrogate",
        "strings-item-too-long",
        "ips-one-string",
        "seventeen-ips",
        "network-dict",
    ],
)
def test_device_refuses_what_no_reader_would_accept(
    pub: dm.MetadataPublisher,
    attributes: dict[str, object],
    network: object,
    error: type[Exception],
    message: str,
) -> None:
    """Out-of-range ints, bools for ints, wrong kinds, strings that do not validate: at the call."""
    with pytest.raises(error, match=message):
        pub.device("n", "d", attributes=attributes, network_data=network)  # type: ignore[arg-type]


def test_devices_built_by_hand_are_checked_at_prepare_and_update(
    pub: dm.MetadataPublisher,
) -> None:
    """A Device made without device() meets the same checks before anything is written."""
    bad = dm.Device(DRIVER, "n", "d", attributes={"i": dm.DeviceAttribute(int=2**64)})
    with pytest.raises(dm.PublishError, match="could not decode"):
        pub.prepare(CLAIM, "r", [bad])
    assert not Path(pub.plugin_data_dir).exists()
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    before = Path(pub.metadata_path(CLAIM, "r")).read_bytes()
    with pytest.raises(dm.PublishError, match="could not decode"):
        pub.update(CLAIM, "r", [bad])
    assert Path(pub.metadata_path(CLAIM, "r")).read_bytes() == before


def test_a_file_over_the_readers_size_limit_is_refused(pub: dm.MetadataPublisher) -> None:
    """Readers refuse files over 16 MiB: so does prepare(), and nothing is written."""
    attributes = {f"a{j}": dm.DeviceAttribute(string="x" * 60) for j in range(30)}
    devices = [dm.Device(DRIVER, "n", f"gpu-{i}", attributes=attributes) for i in range(6000)]
    with pytest.raises(dm.PublishError, match="readers refuse files over 16777216 bytes"):
        pub.prepare(CLAIM, "r", devices)
    assert not Path(pub.plugin_data_dir).exists()


def test_a_generation_at_the_int64_limit_is_not_passed(pub: dm.MetadataPublisher) -> None:
    """An update whose generation would pass int64 is refused; the file stays as it is."""
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    path = Path(pub.metadata_path(CLAIM, "r"))
    os.unlink(pub.state_path(CLAIM))  # a file of an earlier writer: its generation counts
    text = path.read_text().replace('"generation": 1', f'"generation": {2**63 - 1}')
    path.write_text(text)
    with pytest.raises(dm.PublishError, match="would pass the int64 limit"):
        pub.update(CLAIM, "r", [pub.device("n", "d")])
    assert path.read_text() == text


def test_names_that_would_share_a_directory_or_cdi_device_are_refused(
    pub: dm.MetadataPublisher,
) -> None:
    """a_b/c and a/b_c would be one directory: '_' is in no Kubernetes name, so both are refused."""
    first = dm.ClaimRef(name="b_c", namespace="a", uid="u2")
    second = dm.ClaimRef(name="c", namespace="a_b", uid="u3")
    assert pub.claim_dir(first) == pub.claim_dir(second)
    for claim in (first, second):
        with pytest.raises(dm.PublishError, match="is not one Kubernetes gives"):
            pub.prepare(claim, "gpu", [pub.device("n", "d")])
    with pytest.raises(dm.InvalidNameError, match="is not one Kubernetes gives"):
        pub.prepare(dm.ClaimRef(name="c", namespace="ns", uid="a_b"), "c", [pub.device("n", "d")])
    assert not Path(pub.plugin_data_dir).exists()


# --- generations that only grow, and the publisher's own files -----------------------------------


def test_prepare_of_a_prepared_request_goes_on_above_its_generations(
    pub: dm.MetadataPublisher,
) -> None:
    """A second prepare (after a failed update, say) never writes a generation seen before;
    after unprepare, prepare starts at 1 as Go's writer does."""
    device = pub.device("n", "d")
    path = pub.metadata_path(CLAIM, "r")
    pub.prepare(CLAIM, "r", [device])
    assert pub.update(CLAIM, "r", [device]).metadata.generation == 2
    pub.prepare(CLAIM, "r", [device])
    assert dm.read_file(path).metadata.generation == 3
    pub.prepare(CLAIM, "other", [device])  # each request counts on its own
    assert dm.read_file(pub.metadata_path(CLAIM, "other")).metadata.generation == 1
    pub.unprepare(CLAIM)
    pub.prepare(CLAIM, "r", [device])
    assert dm.read_file(path).metadata.generation == 1


def test_the_lock_and_state_files_sit_where_no_reader_looks(pub: dm.MetadataPublisher) -> None:
    """<plugin data dir>/dra-metadata-publisher/<ns>_<claim>.{lock,state}; gone after unprepare."""
    state_dir = os.path.join(pub.plugin_data_dir, "dra-metadata-publisher")
    assert pub.lock_path(CLAIM) == os.path.join(state_dir, "default_my-claim.lock")
    assert pub.state_path(CLAIM) == os.path.join(state_dir, "default_my-claim.state")
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    assert json.loads(Path(pub.state_path(CLAIM)).read_text()) == {
        "requests": {"r": {"generation": 1, "podClaimName": None}}
    }
    assert os.path.exists(pub.lock_path(CLAIM))
    assert sorted(os.listdir(pub.plugin_data_dir)) == [
        "dra-device-metadata",
        "dra-metadata-publisher",
    ]
    pub.unprepare(CLAIM)
    assert os.listdir(state_dir) == []


def test_temporaries_of_killed_writes_go_at_the_next_call_and_at_unprepare(
    pub: dm.MetadataPublisher,
) -> None:
    """What a kill -9 mid-write leaves (node, CDI and state temporaries) goes; others' stay.

    The publisher's temporaries are ``.<name>.tmp`` (its writes are under the claim's
    locks): the next write of ``<name>`` clears its own, with no listing (an update
    writes the state and the file, a prepare the spec too); unprepare clears them all,
    and the ``.<name>.<random>.tmp`` another writer left in the claim's own directories.
    """
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    spec = Path(pub.cdi_spec_path(CLAIM, "r"))
    state = Path(pub.state_path(CLAIM))
    request_dir = Path(pub.metadata_path(CLAIM, "r")).parent
    random = request_dir / ".metadata.json.1a2b3c4d.tmp"
    written = {
        "file": request_dir / ".metadata.json.tmp",
        "state": state.parent / f".{state.name}.tmp",
        "spec": spec.parent / f".{spec.name}.tmp",
    }

    def plant() -> None:
        for path in [random, *written.values()]:
            path.write_bytes(b"half")

    others = Path(pub.cdi_dir) / ".other.example.com_metadata_u9_r.json.1a2b3c4d.tmp"
    others.write_bytes(b"not ours")
    plant()
    pub.update(CLAIM, "r", [pub.device("n", "d")])
    assert sorted(name for name, path in written.items() if path.exists()) == ["spec"]
    assert random.exists()
    plant()
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])  # the kubelet prepares again
    assert [path for path in written.values() if path.exists()] == []
    plant()
    pub.unprepare(CLAIM)
    assert [path for path in [random, *written.values()] if path.exists()] == []
    assert others.exists()


def test_update_goes_on_above_a_generation_another_writer_wrote(
    pub: dm.MetadataPublisher,
) -> None:
    """A file whose generation is above the state's (written by another writer): above it."""
    pub.prepare(CLAIM, "r", [pub.device("n", "d")])
    path = Path(pub.metadata_path(CLAIM, "r"))
    path.write_text(path.read_text().replace('"generation": 1', '"generation": 7'))
    assert pub.update(CLAIM, "r", [pub.device("n", "d")]).metadata.generation == 8


# --- names within NAME_MAX, no listing of the node's directories, one publisher per spec -------


@pytest.mark.parametrize("length", [230, 240, 244, 245, 250, 255])
def test_every_claim_the_go_layout_holds_gets_lock_and_state_names_within_name_max(
    pub: dm.MetadataPublisher, length: int
) -> None:
    """<ns>_<claim> of up to 255 bytes: lock, state and the state's temporary fit in NAME_MAX."""
    namespace = "n" * 63
    claim = dm.ClaimRef(name="c" * (length - 64), namespace=namespace, uid="u1")
    device = pub.device("n", "d")
    pub.prepare(claim, "r", [device])
    assert pub.update(claim, "r", [device]).metadata.generation == 2
    names = os.listdir(os.path.dirname(pub.state_path(claim)))
    assert sorted(names) == sorted(
        os.path.basename(p) for p in (pub.lock_path(claim), pub.state_path(claim))
    )
    assert len(f".{os.path.basename(pub.state_path(claim))}.tmp") <= 255
    whole = length + len(".state.tmp") + 1 <= 255
    assert os.path.basename(pub.state_path(claim)).startswith(claim.directory) == whole
    pub.unprepare(claim)
    assert os.listdir(pub.plugin_data_dir + "/dra-metadata-publisher") == []


def test_shortened_names_are_distinct_and_never_a_whole_name(pub: dm.MetadataPublisher) -> None:
    """Two long claims differing only at the end get different names, with a second '_'."""
    first = dm.ClaimRef(name="c" * 252 + "a", namespace="n" * 63, uid="u1")
    second = dm.ClaimRef(name="c" * 252 + "b", namespace="n" * 63, uid="u2")
    names = {os.path.basename(pub.lock_path(claim)) for claim in (first, second)}
    assert len(names) == 2
    assert all(name.count("_") == 2 and len(name) <= 255 for name in names)


def test_a_claim_no_file_system_can_name_is_refused_naming_its_directory(
    pub: dm.MetadataPublisher,
) -> None:
    """<ns>_<claim> over 255 bytes: prepare names the claim's directory; unprepare finds nothing."""
    claim = dm.ClaimRef(name="c" * 253, namespace="n" * 63, uid="u1")
    with pytest.raises(dm.PublishError, match=r"file name too long: .* is 317 bytes") as err:
        pub.prepare(claim, "r", [pub.device("n", "d")])
    assert err.value.path == pub.claim_dir(claim)
    assert str(err.value).startswith(f'prepare {claim.namespace}/{claim.name} request "r": ')
    assert not Path(pub.plugin_data_dir).exists()
    with pytest.raises(dm.MetadataNotFoundError):
        pub.update(claim, "r", [pub.device("n", "d")])
    pub.unprepare(claim)


LISTINGS = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    import dra_metadata as dm
    pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=sys.argv[2], cdi_dir=sys.argv[3])
    device = pub.device("n", "d")
    for i in range(int(sys.argv[4])):
        pub.prepare(dm.ClaimRef(name=f"c{i}", namespace="ns", uid=f"u{i}"), "gpu", [device])
    listed = []

    def hook(event, args):
        if event in ("os.listdir", "os.scandir"):
            target = args[0]
            if isinstance(target, int):
                target = os.readlink(f"/proc/self/fd/{target}")
            listed.append(os.fsdecode(target))

    sys.addaudithook(hook)
    claim = dm.ClaimRef(name="new", namespace="ns", uid="u-new")
    pub.prepare(claim, "gpu", [device])
    pub.update(claim, "gpu", [device])
    pub.prepare(claim, "gpu", [device])
    pub.unprepare(claim)
    print(json.dumps(listed))
    """
)


def test_no_call_lists_a_directory_that_grows_with_the_claims(tmp_path: Path) -> None:
    """With 200 claims prepared, prepare/update/unprepare list only the claim's own directory."""
    pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=tmp_path / "p", cdi_dir=tmp_path / "cdi")
    done = subprocess.run(
        [sys.executable, "-c", LISTINGS, str(REPO), pub.plugin_data_dir, pub.cdi_dir, "200"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    listed = json.loads(done.stdout)
    claim_dir = os.path.join(pub.plugin_data_dir, "dra-device-metadata", "ns_new")
    assert claim_dir in listed  # the hook sees the listings there are
    assert [path for path in listed if not path.startswith(claim_dir)] == []


def test_a_spec_another_publisher_wrote_is_refused_and_kept(tmp_path: Path) -> None:
    """Same driver, another plugin dir, one CDI dir: a clear refusal; its spec is never removed."""
    first = dm.MetadataPublisher(DRIVER, plugin_data_dir=tmp_path / "a", cdi_dir=tmp_path / "cdi")
    second = dm.MetadataPublisher(DRIVER, plugin_data_dir=tmp_path / "b", cdi_dir=tmp_path / "cdi")
    first.prepare(CLAIM, "r", [first.device("n", "d")])
    spec = Path(first.cdi_spec_path(CLAIM, "r"))
    before = spec.read_bytes()
    with pytest.raises(dm.PublishError, match=r"by another publisher of example\.com") as err:
        second.prepare(CLAIM, "r", [second.device("n", "d")])
    assert err.value.path == str(spec)
    assert f"plugin data directories {tmp_path / 'a'} and {tmp_path / 'b'}" in str(err.value)
    assert not Path(second.claim_dir(CLAIM)).exists()  # nothing written
    second.unprepare(CLAIM)
    assert spec.read_bytes() == before
    first.unprepare(CLAIM)
    assert os.listdir(tmp_path / "cdi") == []
    second.prepare(CLAIM, "r", [second.device("n", "d")])  # free now


def test_the_same_plugin_dir_through_a_link_is_the_same_publisher(tmp_path: Path) -> None:
    """A plugin dir reached through a link of the configured root writes over its own spec."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    direct = dm.MetadataPublisher(
        DRIVER, plugin_data_dir=tmp_path / "real", cdi_dir=tmp_path / "cdi"
    )
    linked = dm.MetadataPublisher(
        DRIVER, plugin_data_dir=tmp_path / "link", cdi_dir=tmp_path / "cdi"
    )
    direct.prepare(CLAIM, "r", [direct.device("n", "d")])
    linked.prepare(CLAIM, "r", [linked.device("n", "d")])
    assert dm.read_file(direct.metadata_path(CLAIM, "r")).metadata.generation == 2
    linked.unprepare(CLAIM)
    assert os.listdir(tmp_path / "cdi") == []


def test_publish_benchmark_quick_run_reports_every_call() -> None:
    """benchmarks/bench_publish.py --quick --json runs and gives each call's ratio."""
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_publish.py", "--quick", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    figures = json.loads(done.stdout)
    assert figures["claims"] == {"few": 100, "many": 1000}
    calls = ["prepare", "update", "prepare again", "unprepare"]
    assert sorted(figures["ratio"]) == sorted(calls)
    assert all(figures["ratio"][call] > 0 for call in calls)
    assert figures["target"] == 1.5


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace on PATH: nothing to count")
def test_a_prepare_makes_at_most_60_system_calls() -> None:
    """benchmarks/bench_publish_calls.py --quick --json: the count per prepare, and its target.

    System calls do not depend on the machine's load: the target is checked here. The
    time ratio (noisy) is only required to be measured.
    """
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_publish_calls.py", "--quick", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    figures = json.loads(done.stdout)
    now = figures["current"]
    assert now["calls"] <= figures["target_calls"] == 60, now["by_call"]
    assert now["by_call"]["fsync"] == 6  # state, file, spec, and each one's directory
    assert now["ms"] > 0
    if figures["baseline"] != "recorded":  # a checkout with its history: both sides timed
        assert figures["before"]["calls"] > now["calls"]
        assert figures["ratio"] > 0
