"""The CDI specs the publisher writes, in the CDI library container runtimes use.

Each spec must load without error, and each CDI device ID the publisher returns must
resolve and inject exactly one read-only bind mount of the node file at the container
path the readers use, as containerd and CRI-O inject it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import dra_metadata as dm
from tests.goref.harness import Goref
from tests.goref.test_decode import EXAMPLES
from tests.goref.test_writer import DRIVER, Claim, claims

pytestmark = pytest.mark.goref


@settings(
    max_examples=max(EXAMPLES // 20, 30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(claims())
def test_every_spec_loads_and_injects_one_read_only_bind_mount(
    goref: Goref, tmp_path_factory: pytest.TempPathFactory, scenario: list[Claim]
) -> None:
    """No spec error; each device: one mount, node file -> container path, ro and bind."""
    tmp = tmp_path_factory.mktemp("cdi")
    pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=tmp / "plugin", cdi_dir=tmp / "cdi")
    expected = {}
    for claim in scenario:
        for request in claim.requests:
            cdi_device = pub.prepare(claim.ref, request.ref, request.devices)
            expected[cdi_device] = (
                pub.metadata_path(claim.ref, request.ref),
                pub.container_path(claim.ref, request.ref),
            )
    loaded = goref.ask({"op": "cdi", "dir": str(tmp / "cdi"), "devices": []})
    assert loaded["errors"] == {}
    assert sorted(loaded["devices"]) == sorted(expected)
    for cdi_device, (host, container) in expected.items():
        answer = goref.ask({"op": "cdi", "dir": str(tmp / "cdi"), "devices": [cdi_device]})
        assert answer["injectError"] is None
        assert answer["unresolved"] == []
        # No mount type: the runtime makes it a bind mount from the options.
        assert answer["mounts"] == [
            {"destination": container, "source": host, "options": ["ro", "bind"]}
        ]


def test_a_broken_spec_is_reported(goref: Goref, tmp_path: Path) -> None:
    """The check can fail: a spec CDI refuses is reported with its error."""
    (tmp_path / "bad.json").write_text(
        json.dumps({"cdiVersion": "0.5.0", "kind": "no-class", "devices": []})
    )
    answer = goref.ask({"op": "cdi", "dir": str(tmp_path), "devices": ["x.io/metadata=a"]})
    assert list(answer["errors"]) == [str(tmp_path / "bad.json")]
    assert answer["unresolved"] == ["x.io/metadata=a"]
