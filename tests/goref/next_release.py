"""The next Kubernetes release, watched: what it answers differently from the pinned one.

``DRA_METADATA_GOREF_NEXT=1 python -m pytest -m goref`` runs the whole differential
suite against ``conformance/goref/go.next.mod`` (the next release of
``k8s.io/dynamic-resource-allocation``, built with the Go its ``toolchain`` line names)
instead of ``go.mod``. Our answers follow the pinned release, and the default run checks
that they do; so where the next release answers as we do, it answers as the pinned one.

Each way the next release is known to answer differently is listed once, in
:data:`KNOWN` (and in docs/differences.md). :class:`Rewriter` turns the harness's
answers back into the pinned release's form for those differences only, counting every
rewrite; any other difference fails a test exactly as it would against the pinned
release. The run ends with one line per area (:func:`summary`): the same, the same but
for the listed differences (with counts), or the failing tests.

The raw view, nothing rewritten: ``DRA_METADATA_GOREF_NEXT=1 scripts/regen-conformance
--check`` lists every corpus answer of the next release that differs from the stored
(pinned) one.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dra_metadata._field_error import go_is_print
from tests.goref.harness import CURRENT, MODULE, NEXT, Goref

#: The areas the summary reports, and the test modules that check each.
AREAS: dict[str, tuple[str, ...]] = {
    "decode": ("test_decode.py",),
    "validation": ("test_decode.py",),
    "merge": ("test_merge.py",),
    "writer": ("test_writer.py",),
    "CDI": ("test_cdi.py",),
    "quoting": ("test_quote.py",),
}


@dataclass(frozen=True)
class Known:
    """One documented way the next release answers differently."""

    name: str
    area: str
    what: str


#: What the next release (v0.38.0-beta.0, Go 1.27.3) answers differently from v0.37.2.
KNOWN: tuple[Known, ...] = (
    Known(
        "scheme",
        "decode",
        'the scheme an unregistered kind\'s error names is "pkg/runtime/scheme.go:110" '
        "(v0.37.2: :111; apimachinery's scheme.go moved a line)",
    ),
    Known(
        "stability",
        "validation",
        "Go marks the rules on metadata.* and on a strings attribute's items beta "
        "(v0.37.2: alpha); the errors and their texts are the same",
    ),
    Known(
        "unicode",
        "quoting",
        "Go 1.27's %q prints the characters Unicode 16.0 and 17.0 added, which Go 1.26 "
        "escapes (\\u0897), in validation texts' bad values and JSON errors' characters",
    ),
)

#: The scheme name as each release words it.
_SCHEME_NEXT, _SCHEME_PINNED = (
    'in scheme "pkg/runtime/scheme.go:110"',
    'in scheme "pkg/runtime/scheme.go:111"',
)
#: Where v0.37.2 marked a declarative rule alpha that the next release marks beta.
_ALPHA_IN_PINNED = re.compile(r"metadata\..*|.*\.attributes\[.*\]\.strings\[\d+\]")


#: What Go quoted inside an error text: a string (``%q``) or a character (``'\u0897'``).
_GO_QUOTED = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\[^']+)'""")
#: The object apimachinery prints as it read it (``%s``, not ``%q``), in the error of a
#: missing ``kind`` or ``apiVersion``: its bytes as written, by both releases.
_RAW_OBJECT = re.compile(r"is missing in '.*'\Z", re.DOTALL)


def _escape(code: int) -> str:
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@dataclass
class Rewriter:
    """Rewrites the next release's answers into the pinned release's, for :data:`KNOWN` only."""

    #: Code points the next release's ``%q`` prints and the pinned release's escapes.
    newly_printable: frozenset[int]
    #: How many answers each known difference changed, by name.
    seen: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._table = {code: _escape(code) for code in self.newly_printable}

    @classmethod
    def measure(cls, goref: Goref) -> Rewriter:
        """A rewriter for the running (next release's) harness: its Unicode tables asked."""
        points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
        quoted = goref.ask({"op": "quote", "texts": points})["quoted"]
        return cls(
            frozenset(
                ord(char)
                for char, go in zip(points, quoted, strict=True)
                if go == f'"{char}"' and char not in '"\\' and not go_is_print(ord(char))
            )
        )

    def _quoted(self, match: re.Match[str]) -> str:
        return match[0].translate(self._table)

    def _text(self, text: str) -> str:
        out = text
        if _SCHEME_NEXT in out:
            out = out.replace(_SCHEME_NEXT, _SCHEME_PINNED)
            self.seen["scheme"] += 1
        if self._table and any(ord(char) in self.newly_printable for char in out):
            # Only what Go quoted: a key in a field path, and an object printed as it was
            # read, are printed raw by both releases.
            raw = _RAW_OBJECT.search(out)
            cut = len(out) if raw is None else raw.start()
            escaped = _GO_QUOTED.sub(self._quoted, out[:cut]) + out[cut:]
            if escaped != out:
                out = escaped
                self.seen["unicode"] += 1
        return out

    def __call__(self, op: str, answer: dict[str, Any]) -> dict[str, Any]:
        """``answer`` to ``op`` as the pinned release gives it (where :data:`KNOWN` says)."""
        if op == "quote":
            answer["quoted"] = [self._text(text) for text in answer["quoted"]]
        elif op in ("decode", "read"):
            if answer.get("error") is not None:
                answer["error"] = self._text(answer["error"])
            if answer.get("validationError") is not None:
                answer["validationError"] = self._text(answer["validationError"])
            answer["validation"] = [self._text(text) for text in answer.get("validation", [])]
            for error in answer.get("validationErrors", []):
                if "error" in error:
                    error["error"] = self._text(error["error"])
                if error.get("stability") == "beta" and _ALPHA_IN_PINNED.fullmatch(
                    error.get("field", "")
                ):
                    error["stability"] = "alpha"
                    self.seen["stability"] += 1
        return answer


#: In a failure of test_decode.py, what says the decoded answer differs (else validation).
_DECODE_FAILURE = re.compile(
    r"error text:|version:|object:|Go decoded it|Go failed with|: (error|object|version|ok)\b"
)


def areas_of(module: str, failure: str) -> list[str]:
    """The areas a test of ``module`` speaks for; of a failure, those its text names."""
    areas = [area for area, modules in AREAS.items() if module in modules]
    if not failure or len(areas) < 2:
        return areas
    named = ["decode"] if _DECODE_FAILURE.search(failure) else []
    named += ["validation"] if "validation" in failure else []
    return named or areas


def summary(rewriter: Rewriter, outcomes: dict[str, Counter[str]]) -> list[str]:
    """The report's lines: per area, whether the next release answers as the pinned one.

    ``outcomes``: per area, the count of each test outcome (``passed``, ``failed``,
    ``error``, ``skipped``: :func:`areas_of`); pytest's report names the failures.
    """
    lines = [
        f"{MODULE} {NEXT.version} ({NEXT.toolchain}) against {CURRENT.version} "
        "(the default run checks that we answer as it does):"
    ]
    for area in AREAS:
        counts = outcomes.get(area, Counter())
        known = [k for k in KNOWN if k.area == area]
        if counts["failed"] or counts["error"]:
            verdict = (
                f"DIFFERS from us: {counts['failed'] + counts['error']} test(s) failed "
                f"(from {CURRENT.version} too where the default run passes)"
            )
        elif not counts["passed"]:
            verdict = "not run"
        else:
            verdict = "same"
            changed = [k for k in known if rewriter.seen[k.name]]
            if changed:
                verdict = "same but for: " + "; ".join(
                    f"{k.what} ({rewriter.seen[k.name]} times)" for k in changed
                )
        lines.append(f"  {area:<10} {verdict}")
    if rewriter.newly_printable:
        lines.append(
            f"  ({len(rewriter.newly_printable)} code points newly printed by %q, "
            f"U+{min(rewriter.newly_printable):04X} to U+{max(rewriter.newly_printable):04X})"
        )
    return lines
