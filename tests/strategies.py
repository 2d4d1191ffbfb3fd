"""Hypothesis strategies for metadata objects and streams, shared by the test modules."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

import dra_metadata as dm

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Text that exercises escaping: quotes, backslashes, HTML characters, controls, non-ASCII.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('az09-./_ "\\<>&\n\t\u2028\u00e9\u65e5\U0001f600{}[]:,')),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)
NAMES = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
DOMAINS = st.sampled_from(
    ["gpu.example.com", "dra.net", "resource.kubernetes.io", "Gpu.Example.COM"]
)
ATTRIBUTE_NAMES = st.one_of(
    st.sampled_from(["uuid", "index", "model", "pciBusID", "numaNode", "driverVersion"]),
    st.builds(lambda d, n: f"{d}/{n}", DOMAINS, st.sampled_from(["uuid", "pcieRoot", "numaNode"])),
    TEXT,
)


@st.composite
def attributes(draw: st.DrawFn) -> dm.DeviceAttribute:
    """A DeviceAttribute, usually with one member set, sometimes none or several."""
    members = {
        "int": INT64,
        "bool": st.booleans(),
        "string": TEXT,
        "version": st.sampled_from(["1.2.3", "0.0.1-rc.1+build.5", "not-semver"]),
        "ints": st.lists(INT64, max_size=3).map(tuple),
        "bools": st.lists(st.booleans(), max_size=3).map(tuple),
        "strings": st.lists(TEXT, max_size=3).map(tuple),
        "versions": st.lists(st.sampled_from(["1.0.0", "2.1.0-alpha"]), max_size=3).map(tuple),
    }
    chosen = draw(st.lists(st.sampled_from(sorted(members)), max_size=2, unique=True))
    values: dict[str, Any] = {name: draw(members[name]) for name in chosen}
    return dm.DeviceAttribute(**values)


network_data = st.builds(
    dm.NetworkDeviceData,
    interface_name=st.one_of(st.just(""), st.sampled_from(["net1", "eth0"]), TEXT),
    ips=st.lists(st.sampled_from(["10.0.0.5/24", "fd00::5/64", "10.0.0.5/24"]), max_size=3).map(
        tuple
    ),
    hardware_address=st.one_of(st.just(""), st.just("02:42:ac:11:00:02")),
)

devices = st.builds(
    dm.Device,
    driver=st.one_of(DOMAINS, TEXT),
    pool=st.one_of(NAMES, TEXT),
    name=st.one_of(NAMES, TEXT),
    attributes=st.dictionaries(ATTRIBUTE_NAMES, attributes(), max_size=4),
    network_data=st.one_of(st.none(), network_data),
)

requests = st.builds(
    dm.DeviceMetadataRequest,
    name=st.one_of(NAMES, st.just("gpu/high-memory"), st.just("")),
    devices=st.lists(devices, max_size=3).map(tuple),
)

object_meta = st.builds(
    dm.ObjectMeta,
    name=st.one_of(NAMES, st.just("")),
    namespace=st.one_of(NAMES, st.just("")),
    uid=st.one_of(st.uuids().map(str), st.just("")),
    generation=st.one_of(st.integers(min_value=0, max_value=10), INT64),
    labels=st.dictionaries(NAMES, TEXT, max_size=2),
)

metadata = st.builds(
    dm.DeviceMetadata,
    api_version=st.sampled_from([dm.V1BETA1, dm.V1ALPHA1]),
    metadata=object_meta,
    pod_claim_name=st.one_of(st.none(), NAMES, st.just(""), TEXT),
    requests=st.lists(requests, max_size=3).map(tuple),
)

version_lists = st.one_of(
    st.just([dm.V1BETA1, dm.V1ALPHA1]),
    st.just([dm.V1ALPHA1]),
    st.just([dm.V1BETA1]),
    st.just(["metadata.resource.k8s.io/v2", dm.V1BETA1, dm.V1ALPHA1]),
    st.just([dm.V1ALPHA1, dm.V1BETA1]),
)
