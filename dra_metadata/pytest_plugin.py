"""pytest fixtures for workloads that read DRA device metadata, registered on install.

Installing ``dra-metadata`` registers this module through the ``pytest11`` entry
point, so any test suite gets two fixtures:

``dra_metadata_tree``
    A fresh :class:`~dra_metadata.testing.MetadataTree` in a temporary directory,
    with ``DRA_METADATA_ROOT`` pointing at it for the test's duration, so code
    that reads with the default root reads this tree.

``dra_metadata_mounted_tree``
    A :class:`~dra_metadata.testing.MountedMetadataTree`: files written on a fake
    node and seen through real read-only single-file bind mounts, as a container
    sees them; ``DRA_METADATA_ROOT`` points at the container side. The test is
    skipped, with the reason, where mounts cannot be made (not root, no
    ``mount``); everything is unmounted afterwards.

.. code-block:: python

    def test_visible_gpus(dra_metadata_tree):
        dra_metadata_tree.template_claim("gpu").request("gpu").device(
            "gpu.example.com", "worker-0", "gpu-0", uuid="gpu-1234")
        dra_metadata_tree.write()
        assert my_job.visible_gpus() == ["gpu-1234"]

The kit itself is imported when a fixture is first used, so having the plugin
loaded costs a test run nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import MetadataTree, MountedMetadataTree

__all__ = ["dra_metadata_mounted_tree", "dra_metadata_tree"]

#: The environment variable the fixtures set (the same as ``dra_metadata.ROOT_ENV``).
_ROOT_ENV = "DRA_METADATA_ROOT"


@pytest.fixture
def dra_metadata_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MetadataTree]:
    """A fresh metadata tree under ``tmp_path``, with ``DRA_METADATA_ROOT`` set to its root."""
    # the testing kit loads only when a test asks for the fixture
    from .testing import MetadataTree

    with MetadataTree(tmp_path / "dra-device-attributes") as tree:
        monkeypatch.setenv(_ROOT_ENV, str(tree.root))
        yield tree


@pytest.fixture
def dra_metadata_mounted_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MountedMetadataTree]:
    """A tree seen through real read-only bind mounts; skips where mounting is refused."""
    # the testing kit loads only when a test asks for the fixture
    from .testing import MountedMetadataTree, MountUnavailableError

    try:
        tree = MountedMetadataTree(tmp_path / "node-plugins", tmp_path / "dra-device-attributes")
    except MountUnavailableError as err:
        pytest.skip(f"bind mounts unavailable: {err.reason}")
    with tree:
        monkeypatch.setenv(_ROOT_ENV, str(tree.root))
        yield tree
