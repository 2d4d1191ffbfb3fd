"""Kubernetes string formats, checked the way the Go reference reports them.

Three formats matter for device metadata:

``k8s-short-name``
    A DNS-1123 label: at most 63 bytes of lower-case letters, digits and ``-``,
    starting and ending with a letter or digit (``podClaimName``, device ``name``).
``k8s-long-name-caseless``
    A DNS-1123 subdomain (labels joined by ``.``), at most 253 bytes, letters of
    either case (the device ``driver``).
``k8s-resource-pool-name``
    One or more lower-case DNS-1123 subdomains joined by ``/``, at most 253 bytes
    in all (the device ``pool``).

Each ``check_*`` function returns the problems Go would report for one value, in
Go's order, as :class:`FormatIssue` records (error type, bad value, detail text);
an empty list means the value is valid; validation turns them into
:class:`~dra_metadata._field_error.FieldError` objects with Go's ``format=...`` origin.
Lengths in bytes are UTF-8 bytes, as Go's ``len`` counts them.

The API's other limits (attributes per device, IPs per device, byte lengths of
the network fields) live here too, so that validation and lint read the same
numbers.

This module uses the standard library only, so a linter can use it without
loading pydantic.

>>> check_short_name("gpu-0")
[]
>>> [issue.detail for issue in check_resource_pool_name("worker-0/")]
['segment 1: must not be empty']
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from ._field_error import VALUE_OMITTED, BadValue, ErrorType

__all__ = [
    "DNS1123_LABEL_MAX_BYTES",
    "DNS1123_LABEL_PATTERN",
    "DNS1123_SUBDOMAIN_CASELESS_PATTERN",
    "DNS1123_SUBDOMAIN_MAX_BYTES",
    "LONG_NAME_CASELESS",
    "MANAGED_FIELDS_OPERATIONS",
    "MAX_ATTRIBUTES",
    "MAX_DRIVER_CHARACTERS",
    "MAX_HARDWARE_ADDRESS_BYTES",
    "MAX_INTERFACE_NAME_BYTES",
    "MAX_IPS",
    "MAX_STRINGS_ELEMENT_BYTES",
    "RESOURCE_POOL_NAME",
    "RESOURCE_POOL_NAME_MAX_BYTES",
    "RESOURCE_POOL_NAME_PATTERN",
    "SHORT_NAME",
    "FormatIssue",
    "check_long_name_caseless",
    "check_resource_pool_name",
    "check_short_name",
    "dns1123_label_messages",
    "dns1123_subdomain_messages",
    "exceeds_bytes",
    "is_long_name_caseless",
    "is_resource_pool_name",
    "is_short_name",
    "utf8_len",
]

# Limits from the Go types' validation tags.
#: Attributes per device (``maxProperties``).
MAX_ATTRIBUTES: Final = 32
#: Characters of a device's driver name.
MAX_DRIVER_CHARACTERS: Final = 63
#: UTF-8 bytes of each element of a ``strings`` attribute.
MAX_STRINGS_ELEMENT_BYTES: Final = 64
#: UTF-8 bytes of ``networkData.interfaceName``.
MAX_INTERFACE_NAME_BYTES: Final = 256
#: UTF-8 bytes of ``networkData.hardwareAddress``.
MAX_HARDWARE_ADDRESS_BYTES: Final = 128
#: Entries of ``networkData.ips``.
MAX_IPS: Final = 16
#: The values of ``managedFields[].operation``.
MANAGED_FIELDS_OPERATIONS: Final = ("Apply", "Update")

#: Format names, as they appear after ``format=`` in an error's origin.
SHORT_NAME: Final = "k8s-short-name"
LONG_NAME_CASELESS: Final = "k8s-long-name-caseless"
RESOURCE_POOL_NAME: Final = "k8s-resource-pool-name"

DNS1123_LABEL_MAX_BYTES: Final = 63
DNS1123_SUBDOMAIN_MAX_BYTES: Final = 253
RESOURCE_POOL_NAME_MAX_BYTES: Final = 253

# The regular expressions as Go spells them; they appear verbatim in the messages.
_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT: Final = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"

# Go compiles the caseless form with the (?i) flag. Go's case folding maps the ASCII
# letters onto each other plus two more runes: U+017F (long s, folds with s) and
# U+212A (Kelvin sign, folds with k). Python's re.IGNORECASE folds a different set
# (it also takes U+0130 and U+0131), so the class is spelled out instead.
_CASELESS_ALNUM: Final = "a-zA-Z0-9\u017f\u212a"
_CASELESS_LABEL: Final = f"[{_CASELESS_ALNUM}]([-{_CASELESS_ALNUM}]*[{_CASELESS_ALNUM}])?"

_CASELESS_SUBDOMAIN: Final = _CASELESS_LABEL + r"(\." + _CASELESS_LABEL + ")*"
_POOL_NAME: Final = f"{_SUBDOMAIN_FMT}(/{_SUBDOMAIN_FMT})*"

# Always used with fullmatch: Go anchors with ^ and $, and Python's $ would also
# match before a final newline.
_LABEL_RE: Final = re.compile(_LABEL_FMT)
_SUBDOMAIN_RE: Final = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_CASELESS_RE: Final = re.compile(_CASELESS_SUBDOMAIN)

# The same languages, spelled with lookarounds ("no '-' at either end"), which
# Python's engine matches faster; used by the is_* predicates on the hot path.
_FAST_LABEL: Final = r"(?!-)[-a-z0-9]+(?<!-)"
_FAST_SUBDOMAIN: Final = _FAST_LABEL + r"(?:\." + _FAST_LABEL + ")*"
_FAST_CASELESS_LABEL: Final = f"(?!-)[-{_CASELESS_ALNUM}]+(?<!-)"
_FAST_LABEL_RE: Final = re.compile(_FAST_LABEL)
_FAST_CASELESS_SUBDOMAIN_RE: Final = re.compile(
    _FAST_CASELESS_LABEL + r"(?:\." + _FAST_CASELESS_LABEL + ")*"
)
_FAST_POOL_NAME_RE: Final = re.compile(_FAST_SUBDOMAIN + f"(?:/{_FAST_SUBDOMAIN})*")

#: Anchored ECMA-262 patterns for JSON Schema, equivalent to the checks above once
#: combined with the matching ``maxLength`` (a match is ASCII apart from the two
#: folded runes, so characters and bytes agree where it matters).
DNS1123_LABEL_PATTERN: Final = f"^{_LABEL_FMT}$"
DNS1123_SUBDOMAIN_CASELESS_PATTERN: Final = (
    "^" + _CASELESS_SUBDOMAIN.replace("\u017f", "\\u017f").replace("\u212a", "\\u212a") + "$"
)
RESOURCE_POOL_NAME_PATTERN: Final = f"^{_POOL_NAME}$"

_LABEL_MESSAGE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_SUBDOMAIN_CASELESS_MESSAGE: Final = (
    "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


class FormatIssue(NamedTuple):
    """One problem with a formatted string: what Go reports, without the path."""

    type: ErrorType
    bad_value: BadValue
    detail: str


def utf8_len(value: str) -> int:
    """Length of ``value`` in UTF-8 bytes (Go's ``len`` of a string).

    A lone surrogate counts three bytes, like the U+FFFD Go would hold in its place.

    >>> utf8_len("gpu"), utf8_len("é")
    (3, 2)
    """
    if value.isascii():
        return len(value)
    return len(value.encode("utf-8", "surrogatepass"))


def exceeds_bytes(value: str, limit: int) -> bool:
    """Whether ``value`` is longer than ``limit`` UTF-8 bytes (quick for short values).

    >>> exceeds_bytes("é" * 32, 64), exceeds_bytes("é" * 33, 64)
    (False, True)
    """
    size = len(value)
    if size > limit:
        return True  # every character takes at least one byte
    if size * 4 <= limit:
        return False  # and at most four
    return utf8_len(value) > limit


def _max_bytes_message(limit: int) -> str:
    return f"must be no more than {limit} bytes"


def _regex_message(message: str, pattern: str, *examples: str) -> str:
    # Go builds "(e.g. 'a', " and then " or 'b', " for every further example, hence
    # the two spaces before "or" when there are two examples.
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


_LABEL_REGEX_MESSAGE: Final = _regex_message(_LABEL_MESSAGE, _LABEL_FMT, "my-name", "123-abc")
_SUBDOMAIN_REGEX_MESSAGE: Final = _regex_message(_SUBDOMAIN_MESSAGE, _SUBDOMAIN_FMT, "example.com")
_SUBDOMAIN_CASELESS_REGEX_MESSAGE: Final = _regex_message(
    _SUBDOMAIN_CASELESS_MESSAGE, _SUBDOMAIN_FMT, "Example.com"
)


def dns1123_label_messages(value: str) -> list[str]:
    """Go's messages for a value that is not a DNS-1123 label (empty if it is one).

    >>> dns1123_label_messages("gpu.0")
    ['must not contain dots']
    """
    messages = []
    if utf8_len(value) > DNS1123_LABEL_MAX_BYTES:
        messages.append(_max_bytes_message(DNS1123_LABEL_MAX_BYTES))
    if _LABEL_RE.fullmatch(value) is None:
        # A lower-case subdomain that is no label can only be wrong for its dots
        # (the length, if wrong, has been reported already).
        if _SUBDOMAIN_RE.fullmatch(value) is not None:
            messages.append("must not contain dots")
        else:
            messages.append(_LABEL_REGEX_MESSAGE)
    return messages


def dns1123_subdomain_messages(value: str, *, caseless: bool = False) -> list[str]:
    """Go's messages for a value that is not a DNS-1123 subdomain (empty if it is one).

    With ``caseless`` upper-case letters are allowed and the message says so.

    >>> dns1123_subdomain_messages("Gpu.Example.COM", caseless=True)
    []
    """
    messages = []
    if utf8_len(value) > DNS1123_SUBDOMAIN_MAX_BYTES:
        messages.append(_max_bytes_message(DNS1123_SUBDOMAIN_MAX_BYTES))
    if caseless:
        if _SUBDOMAIN_CASELESS_RE.fullmatch(value) is None:
            messages.append(_SUBDOMAIN_CASELESS_REGEX_MESSAGE)
    elif _SUBDOMAIN_RE.fullmatch(value) is None:
        messages.append(_SUBDOMAIN_REGEX_MESSAGE)
    return messages


def is_short_name(value: str) -> bool:
    """Whether ``value`` is a valid ``k8s-short-name`` (a quick test, no messages)."""
    return len(value) <= DNS1123_LABEL_MAX_BYTES and _FAST_LABEL_RE.fullmatch(value) is not None


def is_long_name_caseless(value: str) -> bool:
    """Whether ``value`` is a valid ``k8s-long-name-caseless`` (a quick test)."""
    if len(value) <= DNS1123_LABEL_MAX_BYTES:
        # At most 63 runes of at most 3 bytes: far below the byte limit.
        return _FAST_CASELESS_SUBDOMAIN_RE.fullmatch(value) is not None
    return not dns1123_subdomain_messages(value, caseless=True)


def is_resource_pool_name(value: str) -> bool:
    """Whether ``value`` is a valid ``k8s-resource-pool-name`` (a quick test)."""
    # A match is ASCII, so its length in characters is its length in bytes.
    return (
        len(value) <= RESOURCE_POOL_NAME_MAX_BYTES
        and _FAST_POOL_NAME_RE.fullmatch(value) is not None
    )


def check_short_name(value: str) -> list[FormatIssue]:
    """``k8s-short-name``: one Invalid issue per failed DNS-1123 label rule.

    >>> check_short_name("GPU-0")[0].type
    <ErrorType.INVALID: 'Invalid value'>
    """
    if is_short_name(value):
        return []
    return [FormatIssue(ErrorType.INVALID, value, msg) for msg in dns1123_label_messages(value)]


def check_long_name_caseless(value: str) -> list[FormatIssue]:
    """``k8s-long-name-caseless``: one Invalid issue per failed subdomain rule."""
    if is_long_name_caseless(value):
        return []
    return [
        FormatIssue(ErrorType.INVALID, value, msg)
        for msg in dns1123_subdomain_messages(value, caseless=True)
    ]


def check_resource_pool_name(value: str) -> list[FormatIssue]:
    """``k8s-resource-pool-name``: length, then every ``/``-separated segment.

    Over 253 bytes in all is one Too long issue. An empty segment is an Invalid
    issue on the whole value (``segment N: must not be empty``, N counted from 0);
    a segment that is no lower-case subdomain gives Invalid issues on that segment,
    each detail prefixed ``segment N: ``.
    """
    if is_resource_pool_name(value):
        return []
    issues = []
    if utf8_len(value) > RESOURCE_POOL_NAME_MAX_BYTES:
        issues.append(
            FormatIssue(
                ErrorType.TOO_LONG,
                VALUE_OMITTED,
                f"may not be more than {RESOURCE_POOL_NAME_MAX_BYTES} bytes",
            )
        )
    for index, segment in enumerate(value.split("/")):
        if not segment:
            issues.append(
                FormatIssue(ErrorType.INVALID, value, f"segment {index}: must not be empty")
            )
            continue
        issues.extend(
            FormatIssue(ErrorType.INVALID, segment, f"segment {index}: {msg}")
            for msg in dns1123_subdomain_messages(segment)
        )
    return issues
