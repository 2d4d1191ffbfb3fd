"""The writer, byte for byte: MetadataPublisher against the Go kubelet plugin Helper.

Generated claims (direct and from templates, several requests, subrequests, devices
with attributes of every kind and network data) go through the Go ``Helper`` with
device metadata enabled (NodePrepareResources and NodeUnprepareResources over its
gRPC socket, ``UpdateRequestMetadata`` for data known later) and through
``MetadataPublisher.prepare()``, ``update(mode="replace")`` and ``unprepare()``, into
the same directories. After every step both trees must be identical: every path,
type, mode and byte, and the CDI device IDs handed back. Files the publisher keeps
for itself are left out by name (:data:`PUBLISHER_OWN_FILES`).
"""

from __future__ import annotations

import base64
import fnmatch
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._publish import POD_CLAIM_NAME_ANNOTATION, PUBLISHER_STATE_SUBDIR
from tests import strategies
from tests.goref.harness import Goref
from tests.goref.test_decode import EXAMPLES

pytestmark = pytest.mark.goref

#: What the publisher keeps for itself, left out of the comparison: its lock and state
#: files in the plugin data directory, and each prepared claim's hidden CDI lock
#: (``MetadataPublisher.cdi_lock_path``). A path is left out when its first component
#: matches one of these fnmatch patterns. Adjust it with dra_metadata/_publish/_names.py.
PUBLISHER_OWN_FILES: tuple[str, ...] = (PUBLISHER_STATE_SUBDIR, ".*_metadata_*.lock")

DRIVER = "gpu.example.com"


@dataclass
class Request:
    """One request of a claim as the driver prepares it."""

    ref: str  # "gpu" or "gpu/high"
    devices: list[dm.Device]
    deferred: bool  # prepared without metadata, then updated
    update: list[dm.Device] = field(default_factory=list)


@dataclass
class Claim:
    """A ResourceClaim and what the driver prepares for it."""

    ref: dm.ClaimRef
    requests: list[Request]

    def resource_claim(self) -> dict[str, Any]:
        """The ResourceClaim the fake API server holds (allocated: the Helper checks)."""
        meta: dict[str, Any] = {
            "name": self.ref.name,
            "namespace": self.ref.namespace,
            "uid": self.ref.uid,
        }
        if self.ref.pod_claim_name is not None:
            meta["annotations"] = {POD_CLAIM_NAME_ANNOTATION: self.ref.pod_claim_name}
        return {"metadata": meta, "spec": {}, "status": {"allocation": {}}}


PUB = dm.MetadataPublisher(DRIVER)


#: Attribute names the readers accept: unqualified (the driver's domain) and qualified.
ATTRIBUTE_NAMES = st.sampled_from(
    ["uuid", "index", "model", "pciBusID", "numaNode", "driverVersion",
     "gpu.example.com/uuid", "resource.kubernetes.io/pcieRoot", "dra.net/numaNode"]
)  # fmt: skip
TEXT = st.text(alphabet=st.sampled_from(list('az09-./_ "\\<>&\u00e9\u65e5\U0001f600')), max_size=12)
VERSIONS = st.sampled_from(["1.2.3", "0.0.1-rc.1+build.5", "2.1.0-alpha"])
#: One member of every kind, as the publisher accepts them (it refuses what readers refuse).
ATTRIBUTES = st.one_of(
    strategies.INT64.map(lambda v: dm.DeviceAttribute(int=v)),
    st.booleans().map(lambda v: dm.DeviceAttribute(bool=v)),
    TEXT.map(lambda v: dm.DeviceAttribute(string=v)),
    VERSIONS.map(lambda v: dm.DeviceAttribute(version=v)),
    st.lists(strategies.INT64, min_size=1, max_size=3).map(
        lambda v: dm.DeviceAttribute(ints=tuple(v))
    ),
    st.lists(st.booleans(), min_size=1, max_size=3).map(
        lambda v: dm.DeviceAttribute(bools=tuple(v))
    ),
    st.lists(TEXT, min_size=1, max_size=3).map(lambda v: dm.DeviceAttribute(strings=tuple(v))),
    st.lists(VERSIONS, min_size=1, max_size=3).map(lambda v: dm.DeviceAttribute(versions=tuple(v))),
)
NETWORK = st.builds(
    dm.NetworkDeviceData,
    interface_name=st.sampled_from(["", "net1", "eth0"]),
    ips=st.lists(st.sampled_from(["10.0.0.5/24", "fd00::5/64", "192.0.2.1/32"]), max_size=3).map(
        tuple
    ),
    hardware_address=st.sampled_from(["", "02:42:ac:11:00:02"]),
)


@st.composite
def devices(draw: st.DrawFn, network: bool) -> list[dm.Device]:
    """Devices of the driver, with attributes of every kind, network data if asked."""
    found = []
    names = draw(st.lists(strategies.NAMES, min_size=1, max_size=3, unique=True))
    for name in names:
        try:
            device = PUB.device(
                draw(st.sampled_from(["worker-0", "node-a", "pool/sub"])),
                name,
                attributes=draw(st.dictionaries(ATTRIBUTE_NAMES, ATTRIBUTES, max_size=4)),
                network_data=draw(st.one_of(st.none(), NETWORK)) if network else None,
            )
        except dm.PublishError:  # the publisher refuses what readers refuse; Go writes it
            assume(False)
            raise
        found.append(device)
    return found


@st.composite
def claims(draw: st.DrawFn) -> list[Claim]:
    """One or two claims, direct or from templates, with their requests."""
    found = []
    for index in range(draw(st.integers(min_value=1, max_value=2))):
        uid = draw(st.one_of(st.uuids().map(str), st.sampled_from(["abc-1", "claim-uid"])))
        ref = dm.ClaimRef(
            name=draw(strategies.NAMES) + f"-{index}",
            namespace=draw(st.sampled_from(["default", "ml", "ns-1"])),
            uid=f"{uid}{index}",
            # Not "": the publisher refuses an empty annotation readers would refuse.
            pod_claim_name=draw(st.sampled_from([None, "gpu", "my-claim"])),
        )
        requests = []
        bases = draw(
            st.lists(st.sampled_from(["gpu", "nic", "r0"]), min_size=1, max_size=3, unique=True)
        )
        for base in bases:
            ref_name = draw(st.sampled_from([base, base, f"{base}/high-memory"]))
            deferred = draw(st.booleans())
            request = Request(ref_name, draw(devices(network=not deferred)), deferred)
            if deferred or draw(st.booleans()):
                request.update = draw(devices(network=True))
            requests.append(request)
        found.append(Claim(ref, requests))
    return found


def _wire_device(device: dm.Device, requests: list[str], with_metadata: bool) -> dict[str, Any]:
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("r", (device,)),))
    body: Any = md.to_dict()
    wire: dict[str, Any] = body["requests"][0]["devices"][0]
    return {
        "requests": requests,
        "pool": device.pool,
        "device": device.name,
        "attributes": wire.get("attributes"),
        "networkData": wire.get("networkData"),
        "hasMetadata": with_metadata,
    }


def _bare(devices: list[dm.Device]) -> list[dm.Device]:
    return [PUB.device(d.pool, d.name) for d in devices]


def go_run(
    goref: Goref, plugin: Path, cdi: Path, versions: list[str], scenario: list[Claim]
) -> list[dict[str, Any]]:
    """The Go Helper through prepare, updates and unprepare; one snapshot a step."""
    kubelet_claims = [
        {"namespace": c.ref.namespace, "name": c.ref.name, "uid": c.ref.uid} for c in scenario
    ]
    steps: list[dict[str, Any]] = [
        {
            "call": "prepare",
            "claims": kubelet_claims,
            "results": {
                c.ref.uid: {
                    "devices": [
                        _wire_device(d, [r.ref], not r.deferred)
                        for r in c.requests
                        for d in r.devices
                    ]
                }
                for c in scenario
            },
        }
    ]
    for c in scenario:
        for r in c.requests:
            if r.update:
                steps.append(
                    {
                        "call": "update",
                        "namespace": c.ref.namespace,
                        "name": c.ref.name,
                        "uid": c.ref.uid,
                        "request": r.ref,
                        "devices": [_wire_device(d, [r.ref], True) for d in r.update],
                    }
                )
    steps.append({"call": "unprepare", "claims": kubelet_claims})
    answer = goref.ask(
        {
            "op": "write",
            "driver": DRIVER,
            "versions": versions,
            "pluginDataDir": str(plugin),
            "cdiDir": str(cdi),
            "claims": [c.resource_claim() for c in scenario],
            "steps": steps,
        }
    )
    result: list[dict[str, Any]] = answer["steps"]
    return result


def _own(rel: str) -> bool:
    first = rel.split(os.sep, 1)[0]
    return any(fnmatch.fnmatch(first, pattern) for pattern in PUBLISHER_OWN_FILES)


def snapshot(root: Path) -> dict[str, dict[str, Any]]:
    """What is below ``root``: the harness's snapshot form, the publisher's own files left out."""
    found: dict[str, dict[str, Any]] = {}
    if not root.exists():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if _own(rel):
                continue
            info = path.lstat()
            entry: dict[str, Any] = {"mode": stat.S_IMODE(info.st_mode)}
            if stat.S_ISREG(info.st_mode):
                entry["type"] = "file"
                entry["data_b64"] = base64.b64encode(path.read_bytes()).decode()
            elif stat.S_ISDIR(info.st_mode):
                entry["type"] = "dir"
            else:
                entry["type"] = "symlink" if stat.S_ISLNK(info.st_mode) else "other"
            found[rel] = entry
    return found


def _go_snapshot(entries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        rel: {key: value for key, value in entry.items() if value is not None}
        for rel, entry in entries.items()
    }


def _show(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> str:
    lines = []
    for rel in sorted(set(a) | set(b)):
        if a.get(rel) != b.get(rel):

            def text(e: dict[str, Any] | None) -> str:
                if e is None:
                    return "absent"
                data = base64.b64decode(e.get("data_b64", "")).decode("utf-8", "replace")
                return f"{e['type']} {e['mode']:o}\n{data}"

            lines.append(f"--- {rel}\nours: {text(a.get(rel))}\nGo:   {text(b.get(rel))}")
    return "\n".join(lines)


def check_scenario(goref: Goref, tmp: Path, versions: list[str], scenario: list[Claim]) -> None:
    """Go's Helper and our publisher leave the same files after every step."""
    plugin, cdi = tmp / "plugins" / DRIVER, tmp / "cdi"
    go_steps = go_run(goref, plugin, cdi, versions, scenario)
    for step in go_steps:
        assert not step.get("error"), step["error"]
    shutil.rmtree(tmp / "plugins", ignore_errors=True)
    shutil.rmtree(cdi, ignore_errors=True)

    pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=plugin, cdi_dir=cdi, versions=versions)
    ours: list[tuple[dict[str, Any], dict[str, Any]]] = []
    ids: dict[str, dict[str, str]] = {}
    for c in scenario:
        for r in c.requests:
            given_devices = _bare(r.devices) if r.deferred else r.devices
            ids.setdefault(c.ref.uid, {})[r.ref.split("/")[0]] = pub.prepare(
                c.ref, r.ref, given_devices
            )
    ours.append((snapshot(plugin), snapshot(cdi)))
    for c in scenario:
        for r in c.requests:
            if r.update:
                pub.update(c.ref, r.ref, r.update, mode="replace")
                ours.append((snapshot(plugin), snapshot(cdi)))
    for c in scenario:
        pub.unprepare(c.ref)
    ours.append((snapshot(plugin), snapshot(cdi)))

    assert len(ours) == len(go_steps)
    for index, ((our_plugin, our_cdi), go) in enumerate(zip(ours, go_steps, strict=True)):
        call = go_steps[index].get("response") and index == 0
        go_plugin, go_cdi = _go_snapshot(go["plugin"]), _go_snapshot(go["cdi"])
        assert our_plugin == go_plugin, f"step {index}: plugin dir\n{_show(our_plugin, go_plugin)}"
        assert our_cdi == go_cdi, f"step {index}: CDI dir\n{_show(our_cdi, go_cdi)}"
        if call:
            go_ids = {
                uid: {
                    req: cdi_id
                    for device in claim["devices"]
                    for cdi_id in device["cdiDeviceIDs"]
                    for req in device["requests"]
                    if cdi_id.startswith(f"{DRIVER}/metadata=")
                }
                for uid, claim in go["response"].items()
            }
            assert ids == go_ids


@settings(
    max_examples=max(EXAMPLES // 20, 30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # each example starts a Helper: no shrinking; what exploration saved is replayed
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(
    # Newest first: the publisher refuses another order, which Go writes (docs/driver.md).
    st.sampled_from([[dm.V1BETA1], [dm.V1BETA1, dm.V1ALPHA1]]),
    claims(),
)
def test_publisher_writes_what_the_go_helper_writes(
    goref: Goref, versions: list[str], scenario: list[Claim]
) -> None:
    """prepare, update (replace) and unprepare leave Go's files, modes and CDI IDs."""
    with tempfile.TemporaryDirectory() as tmp:
        check_scenario(goref, Path(tmp), versions, scenario)
