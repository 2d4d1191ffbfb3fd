"""The next release's run, without Go: its module file, its rewrites, its report.

These run in the default suite; the run itself is
``DRA_METADATA_GOREF_NEXT=1 python -m pytest -m goref`` (tests/goref/next_release.py).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from tests.goref import harness
from tests.goref.harness import CURRENT, MODULE, NEXT, NEXT_ENV, release
from tests.goref.next_release import KNOWN, Rewriter, areas_of, summary


def test_each_module_file_names_its_release_and_the_go_it_needs() -> None:
    """go.mod pins v0.37.2 with the Go on PATH; go.next.mod pins v0.38.0-beta.0 with Go 1.27.3."""
    assert (CURRENT.version, CURRENT.toolchain, CURRENT.flags()) == ("v0.37.2", None, [])
    assert (NEXT.version, NEXT.toolchain) == ("v0.38.0-beta.0", "go1.27.3")
    assert NEXT.flags() == ["-modfile=go.next.mod"]
    assert NEXT.sumfile == "go.next.sum"
    assert (harness.SOURCE / NEXT.sumfile).is_file()
    assert NEXT.env()["GOTOOLCHAIN"] == "go1.27.3"


def test_the_variable_selects_the_next_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without DRA_METADATA_GOREF_NEXT=1 the pinned release is built; with it, the next."""
    monkeypatch.delenv(NEXT_ENV, raising=False)
    assert release() is CURRENT
    monkeypatch.setenv(NEXT_ENV, "1")
    assert release() is NEXT


def test_a_toolchain_that_cannot_be_fetched_is_a_reason_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """go version failing under GOTOOLCHAIN becomes GorefUnavailable naming the Go needed."""

    def fails(go: str, env: dict[str, str] | None = None) -> str:
        import subprocess

        raise subprocess.CalledProcessError(1, [go, "version"], stderr="go: download failed")

    monkeypatch.setattr(harness, "go_version", fails)
    with pytest.raises(harness.GorefUnavailable, match=r"needs Go go1\.27\.3.*download failed"):
        harness.source_hash("go", NEXT)


def _decode_answer(error: str | None, texts: list[str], stability: str) -> dict[str, Any]:
    return {
        "error": error,
        "validation": texts,
        "validationError": None,
        "validationErrors": [
            {"field": "metadata.generation", "stability": stability, "error": t} for t in texts
        ],
    }


def test_only_the_listed_differences_are_rewritten() -> None:
    """The scheme line, beta on a metadata.* rule, and newly printable quoted characters."""
    rewriter = Rewriter(frozenset({0x0897}))
    answer = rewriter(
        "decode",
        _decode_answer(
            'no kind "X" is registered for version "v" in scheme "pkg/runtime/scheme.go:110"',
            ['attributes[\u0897]: Invalid value: "a\u0897": bad'],
            "beta",
        ),
    )
    assert answer["error"].endswith('"pkg/runtime/scheme.go:111"')
    assert answer["validation"] == ['attributes[\u0897]: Invalid value: "a\\u0897": bad']
    assert answer["validationErrors"][0]["stability"] == "alpha"
    assert rewriter.seen == Counter({"scheme": 1, "unicode": 2, "stability": 1})
    quoted = rewriter("quote", {"quoted": ['"\u0897"', '"\u0898"']})
    assert quoted["quoted"] == ['"\\u0897"', '"\u0898"']
    syntax = rewriter("decode", _decode_answer("invalid character '\u0897' looking", [], "beta"))
    assert syntax["error"] == "invalid character '\\u0897' looking"
    missing = 'decode v1beta1: Object \'Kind\' is missing in \'{"labels":{"0":"\u0897"}}\''
    raw = rewriter("decode", _decode_answer(missing, [], "beta"))
    assert raw["error"] == missing  # the object as read (%s): raw in both releases


def test_anything_else_is_left_as_go_answered() -> None:
    """A beta rule elsewhere, another scheme line, and the writer's files stay untouched."""
    rewriter = Rewriter(frozenset({0x0897}))
    other = _decode_answer('in scheme "pkg/runtime/scheme.go:99"', ["x"], "beta")
    other["validationErrors"][0]["field"] = "requests[0].devices[0].networkData.ips[1]"
    assert rewriter("decode", copy.deepcopy(other)) == other
    written = {"steps": [{"plugin": {"a": {"data_b64": "\u0897"}}}]}
    assert rewriter("write", copy.deepcopy(written)) == written
    assert not rewriter.seen


def test_a_failure_counts_against_the_areas_its_text_names() -> None:
    """test_decode.py speaks for decode and validation; a failure for those it names."""
    assert areas_of("test_decode.py", "") == ["decode", "validation"]
    assert areas_of("test_decode.py", "error text: ours 'a', Go 'b'") == ["decode"]
    assert areas_of("test_decode.py", "validation: ours only ...") == ["validation"]
    assert areas_of("test_decode.py", "s1-2: validationErrors") == ["validation"]
    assert areas_of("test_decode.py", "s1-245: error") == ["decode"]
    assert areas_of("test_writer.py", "anything") == ["writer"]
    assert areas_of("test_next_release.py", "") == []


def test_the_report_says_per_area_same_listed_or_differs() -> None:
    """One line per area, the rewrites counted, failures called differences."""
    rewriter = Rewriter(frozenset({0x0897}))
    rewriter.seen.update({"scheme": 6})
    outcomes = {
        "decode": Counter(passed=3),
        "validation": Counter(passed=2, failed=1),
        "merge": Counter(passed=1),
    }
    lines = summary(rewriter, outcomes)
    assert lines[0].startswith(f"{MODULE} v0.38.0-beta.0 (go1.27.3) against v0.37.2")
    by_area = {line.split()[0]: line for line in lines[1:]}
    assert "same but for: " + KNOWN[0].what + " (6 times)" in by_area["decode"]
    assert "DIFFERS from us: 1 test(s) failed" in by_area["validation"]
    assert by_area["merge"].split() == ["merge", "same"]
    assert by_area["writer"].split() == ["writer", "not", "run"]
    assert lines[-1] == "  (1 code points newly printed by %q, U+0897 to U+0897)"
