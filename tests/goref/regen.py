"""Regenerate the conformance corpus's answers from the Go reference harness.

``scripts/regen-conformance`` (``python -m tests.goref.regen``) asks the harness,
built from ``conformance/goref`` (the module version its go.mod pins), for the
answer to every input of ``tests/data/conformance/corpus.jsonl``: inputs are kept,
answers are replaced, and every answer that changed is printed (case id and keys).
``--check`` changes nothing and exits 1 when an answer would change.

Go lists the validation errors of one device's attributes in map order, so an
answer that differs from the stored one only in that order is kept as stored.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from tests.goref.harness import Goref, GorefUnavailable, build

CORPUS = Path(__file__).resolve().parents[1] / "data" / "conformance" / "corpus.jsonl"
#: Where a merge case's files go in the tree the harness mounts.
CLAIM, REQUEST = "claim", "request"


def _same_up_to_order(old: dict[str, Any], new: dict[str, Any]) -> bool:
    if set(old) != set(new):
        return False
    for key in old:
        if key in ("validation", "validationErrors"):
            if Counter(map(json.dumps, old[key])) != Counter(map(json.dumps, new[key])):
                return False
        elif key == "validationError":
            if (old[key] is None) != (new[key] is None):
                return False
        elif old[key] != new[key]:
            return False
    return True


def _normalised(answer: dict[str, Any]) -> dict[str, Any]:
    for error in answer.get("validationErrors", []):
        if error.get("type") == "non-field-error":
            error.pop("badValue", None)
    return answer


def merge_answer(goref: Goref, files: dict[str, bytes]) -> dict[str, Any]:
    """Go's answer for one request directory holding ``files``."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "resourceclaims" / CLAIM / REQUEST
        directory.mkdir(parents=True)
        for name, data in files.items():
            (directory / name).write_bytes(data)
        got = goref.ask({"op": "read", "root": tmp, "name": CLAIM, "request": REQUEST})
    error = got["error"]
    return {
        "mode": "merge",
        "ok": got["ok"],
        "error": None if error is None else error.replace(str(directory), "<DIR>"),
        "object": got["object"],
        "validation": [],
        "validationErrors": [],
        "validationError": None,
        "version": None,
    }


def regenerate(goref: Goref) -> tuple[list[dict[str, Any]], list[str]]:
    """Every case with Go's answer now, and a line per changed answer."""
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
    changed = []
    for case in cases:
        if case["kind"] == "decode":
            new = _normalised(goref.decode(base64.b64decode(case["input_b64"])))
        else:
            files = {name: base64.b64decode(data) for name, data in case["files_b64"].items()}
            new = merge_answer(goref, files)
        old = case["expect"]
        if not _same_up_to_order(old, new):
            keys = [key for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
            changed.append(f"{case['id']}: {', '.join(keys)}")
            case["expect"] = new
    return cases, changed


def main(argv: list[str]) -> int:
    """Rewrite the corpus (or, with --check, only report); print what changed."""
    check = argv == ["--check"]
    if argv and not check:
        print("usage: scripts/regen-conformance [--check]", file=sys.stderr)
        return 2
    try:
        goref = Goref(build())
    except GorefUnavailable as err:
        print(f"regen-conformance: {err}", file=sys.stderr)
        return 1
    try:
        versions = goref.versions()
        cases, changed = regenerate(goref)
    finally:
        goref.close()
    print(
        f"{len(cases)} cases answered by k8s.io/dynamic-resource-allocation "
        f"{versions['k8s.io/dynamic-resource-allocation']} ({versions['go']}, "
        f"GOEXPERIMENT={versions.get('GOEXPERIMENT', '')}); {len(changed)} answers changed"
    )
    for line in changed:
        print(f"  {line}")
    if check:
        return 1 if changed else 0
    with open(CORPUS, "w", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps(case) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
