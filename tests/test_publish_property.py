"""Property: whatever the publisher accepts, every reader accepts, byte for byte.

Inputs are drawn the way a driver author would pass them (plain values of every
kind, ints past int64, strings with lone surrogates and markup, names valid and
not); for each, ``device()`` and ``prepare()`` either refuse with the publisher's
errors, or write a file that decodes, validates, lints clean and round-trips
through ``encode()`` byte for byte.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from tests.exploration import examples

DRIVER = "gpu.example.com"

LABELS = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?\Z")
NAMES = st.one_of(LABELS, st.text(min_size=1, max_size=12))
TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", "<&>", "\u2028", "\udcff", "\x00dra-metadata-raw-0", "x" * 70]),
)
INTS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64]),
)
PLAIN = st.one_of(
    st.booleans(),
    INTS,
    TEXT,
    TEXT.map(dm.VersionValue),
    st.lists(st.booleans(), max_size=3),
    st.lists(INTS, max_size=3),
    st.lists(TEXT, max_size=3),
)
ATTRIBUTES = st.dictionaries(
    st.one_of(LABELS, st.sampled_from(["resource.kubernetes.io/pciBusID", "a/b/c", ""])),
    PLAIN,
    max_size=4,
)
NETWORK = st.one_of(
    st.none(),
    st.builds(
        dm.NetworkDeviceData,
        interface_name=TEXT,
        ips=st.lists(
            st.sampled_from(["10.0.0.5/24", "fd00::1/64", "10.0.0.1", "x"]), max_size=3
        ).map(tuple),
        hardware_address=st.sampled_from(["", "00:11:22:33:44:55", "zz"]),
    ),
)
REFUSALS = (dm.PublishError, dm.InvalidNameError, TypeError)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    name=NAMES,
    namespace=NAMES,
    uid=NAMES,
    request=NAMES,
    pool=NAMES,
    device=NAMES,
    attributes=ATTRIBUTES,
    network=NETWORK,
)
def test_what_the_publisher_accepts_every_reader_accepts(
    name: str,
    namespace: str,
    uid: str,
    request: str,
    pool: str,
    device: str,
    attributes: dict[str, object],
    network: dm.NetworkDeviceData | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=f"{tmp}/{DRIVER}", cdi_dir=f"{tmp}/cdi")
        try:
            claim = dm.ClaimRef(name=name, namespace=namespace, uid=uid)
            built = pub.device(pool, device, attributes=attributes, network_data=network)  # type: ignore[arg-type]
            pub.prepare(claim, request, [built])
        except REFUSALS:
            assert not Path(tmp, DRIVER, "dra-device-metadata").exists()
            return
        path = pub.metadata_path(claim, request)
        data = Path(path).read_bytes()
        md = dm.read_file(path)
        assert dm.validate(md) == []
        assert dm.lint(data, path=path) == []
        assert dm.encode(md, pub.versions) == data
        assert md.requests[0].devices[0] == built
