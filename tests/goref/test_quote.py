"""Go's quoting of bad values (``%q``, strconv.Quote), every code point, against go_quote()."""

from __future__ import annotations

import pytest

from dra_metadata._field_error import go_quote
from tests.goref.harness import Goref

pytestmark = pytest.mark.goref


def test_every_code_point_is_quoted_as_go_quotes_it(goref: Goref) -> None:
    """Printable or escaped as Go's Unicode tables say, whatever Python's Unicode version."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = ["".join(points[i : i + 256]) for i in range(0, len(points), 256)]
    quoted = goref.ask({"op": "quote", "texts": texts})["quoted"]
    wrong = [
        f"U+{ord(char):04X}: ours {go_quote(char)}, Go {go_quote_of}"
        for text, go in zip(texts, quoted, strict=True)
        if go_quote(text) != go
        for char in text
        if go_quote(char)
        != (go_quote_of := goref.ask({"op": "quote", "texts": [char]})["quoted"][0])
    ]
    assert not wrong, wrong[:20]
