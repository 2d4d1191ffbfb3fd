"""The committed test data is all there: no clone or sdist runs a shrunken corpus."""

from __future__ import annotations

from tests.conftest import CORPUS, DATA, DECODE_CASES, MERGE_CASES


def test_corpus_has_all_550_cases_once() -> None:
    """500 decode streams and 50 request-directory merges, each id once."""
    assert (len(DECODE_CASES), len(MERGE_CASES)) == (500, 50)
    assert len({case["id"] for case in CORPUS}) == len(CORPUS) == 550


def test_upstream_fixtures_are_there() -> None:
    """Both upstream round-trip fixtures, one ``metadata.json`` per directory."""
    base = DATA / "upstream"
    assert sorted(entry.name for entry in base.iterdir()) == ["HEAD", "v1.36.0"]
    assert [path.name for path in (base / "HEAD").iterdir()] == ["metadata.json"]
    assert [path.name for path in (base / "v1.36.0").iterdir()] == ["metadata.json"]
