"""What the differential tests compare: our answer and the Go reference's, side by side.

Go's error texts are compared whole when the harness is built as the docs say
(``GOEXPERIMENT=jsonv2``, the default). Asked to check a default Go build instead
(``DRA_METADATA_GOREF_GOEXPERIMENT=``), the JSON library's own words after
``read metadata object from stream: `` and ``json parse error: `` are left out
(docs/differences.md, "JSON error wording").
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import dra_metadata as dm

#: Inputs on which we and Go disagreed once: replayed by every run (test_decode.py).
REGRESSIONS = Path(__file__).resolve().parent / "regressions"
#: The one error whose wording after this prefix is the JSON scanner's.
SYNTAX_PREFIX = "read metadata object from stream: "
#: The prefixes after which a default Go build words JSON errors its own way.
JSON_PREFIXES = (SYNTAX_PREFIX, "json parse error: ")


def wire(obj: dict[str, Any]) -> dict[str, Any]:
    """A Go object without kind/apiVersion: the wire body ``to_dict()`` gives."""
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


def same_error(ours: str, go: str, *, jsonv2: bool = True, whole: bool = True) -> bool:
    """Our error text against Go's, as docs/differences.md defines.

    ``whole``: the texts are equal (else ours may go on after Go's). Without
    ``jsonv2``, the JSON library's words after :data:`JSON_PREFIXES` are not compared.
    """
    if not jsonv2:
        for prefix in JSON_PREFIXES:
            head, sep, _ = go.partition(prefix)
            if sep:
                return ours.startswith(head + sep)
    return ours == go if whole else ours.startswith(go)


#: The decoded version of Go's that we refuse on purpose (docs/differences.md: Go's
#: in-memory version, never written to disk; Go decodes it by Go field names).
INTERNAL = "metadata.resource.k8s.io/__internal"


def decode_differences(data: bytes, go: dict[str, Any], *, jsonv2: bool = True) -> list[str]:
    """Every way our decode() and validate() of ``data`` differ from Go's answer ``go``."""
    try:
        md = dm.decode(data)
    except dm.DecodeError as err:
        if go["error"] is None:
            if go["version"] == INTERNAL and str(err).startswith(f"decode {INTERNAL}: "):
                return []  # documented: we refuse the internal version
            return [f"Go decoded it ({go['version']}); we failed: {err}"]
        if not same_error(str(err), go["error"], jsonv2=jsonv2):
            return [f"error text: ours {str(err)!r}, Go {go['error']!r}"]
        return []
    if go["error"] is not None:
        return [f"Go failed with {go['error']!r}; we decoded {md.api_version}"]
    found = []
    if md.api_version != go["version"]:
        found.append(f"version: ours {md.api_version}, Go {go['version']}")
    if md.to_dict() != wire(go["object"]):
        ours_text = json.dumps(md.to_dict())[:2000]
        found.append(f"object: ours {ours_text}\nGo {json.dumps(wire(go['object']))[:2000]}")
    errors = dm.validate(md)
    ours = Counter(
        (e.field, e.type.value, json.dumps(e.bad_value), e.detail, e.origin) for e in errors
    )
    theirs = Counter(
        (e["field"], e["typeText"], json.dumps(e.get("badValue")), e["detail"], e.get("origin", ""))
        for e in go["validationErrors"]
    )
    if ours != theirs:
        found.append(f"validation: ours only {ours - theirs}, Go only {theirs - ours}")
    if Counter(str(e) for e in errors) != Counter(go["validation"]):
        found.append(f"validation texts: ours {[str(e) for e in errors]}, Go {go['validation']}")
    return found


def save_regression(data: bytes) -> Path:
    """Keep an input we disagreed on, named by its hash, for every later run."""
    REGRESSIONS.mkdir(exist_ok=True)
    path = REGRESSIONS / f"{hashlib.sha256(data).hexdigest()[:16]}.bin"
    path.write_bytes(data)
    return path
