"""Go's ``time`` package as ``metav1.Time`` uses it: RFC 3339 text parsed and written.

:func:`parse_time` is ``time.Parse(time.RFC3339, text)``, its errors worded as
Go words them (:class:`GoTimeError`); :func:`format_time` is what
``metav1.Time.MarshalJSON`` writes. An instant is a :data:`GoTime`, (Unix
seconds, nanoseconds); :data:`ZERO_TIME` is Go's zero ``time.Time``. The body
decoder of the exact path (:mod:`._gojson`) reads and writes ``metav1.Time``
fields with these.
"""

from __future__ import annotations

from typing import Final, NoReturn, TypeAlias

__all__ = ["ZERO_TIME", "GoTime", "GoTimeError", "format_time", "parse_time"]

#: An instant: (Unix seconds, nanoseconds).
GoTime: TypeAlias = tuple[int, int]
#: 0001-01-01T00:00:00Z, Go's zero ``time.Time``.
ZERO_TIME: Final[GoTime] = (-62135596800, 0)
_LAYOUT: Final = "2006-01-02T15:04:05Z07:00"


class GoTimeError(ValueError):
    """A text ``time.Parse`` rejects; ``str(err)`` is Go's error text."""


def _time_quote(raw: bytes) -> str:
    """The ``time`` package's own quoting of values in ParseError messages."""
    out = ['"']
    for byte in raw:
        if byte >= 0x80 or byte < 0x20:
            out.append(f"\\x{byte:02x}")
        elif byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


def _days_in(month: int, year: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _digit(raw: bytes, index: int) -> bool:
    return index < len(raw) and 0x30 <= raw[index] <= 0x39


def _getnum(raw: bytes, fixed: bool) -> tuple[int, bytes] | None:
    """time's ``getnum``: one or two digits (exactly two when ``fixed``)."""
    if not _digit(raw, 0):
        return None
    if not _digit(raw, 1):
        if fixed:
            return None
        return raw[0] - 0x30, raw[1:]
    return (raw[0] - 0x30) * 10 + raw[1] - 0x30, raw[2:]


# The fields after the year, in layout order: the separator before each, Go's layout
# element (for "cannot parse" errors), whether it takes exactly two digits, and the
# range checked right away (the day is checked against its month at the end).
_TIME_FIELDS: Final[tuple[tuple[bytes, str, bool, tuple[int, int] | None, str], ...]] = (
    (b"-", "01", True, (1, 12), "month"),
    (b"-", "02", True, None, "day"),
    (b"T", "15", False, (0, 23), "hour"),
    (b":", "04", True, (0, 59), "minute"),
    (b":", "05", True, (0, 59), "second"),
)


def parse_time(text: str) -> GoTime:
    """Go's ``time.Parse(time.RFC3339, text)``, returning the instant or raising its error.

    The RFC 3339 fast path only accepts a subset of what the general layout
    parser accepts, with the same result, so only the general parser is modelled.
    """
    whole = text.encode("utf-8")
    quoted = _time_quote(whole)

    def cannot(value: bytes, element: str) -> NoReturn:
        raise GoTimeError(
            f'parsing time {quoted} as "{_LAYOUT}": '
            f'cannot parse {_time_quote(value)} as "{element}"'
        )

    def out_of_range(what: str) -> NoReturn:
        raise GoTimeError(f"parsing time {quoted}: {what} out of range")

    def skip(value: bytes, prefix: bytes) -> bytes:
        if not value.startswith(prefix):
            cannot(value, prefix.decode("ascii"))
        return value[len(prefix) :]

    value = whole
    if len(value) < 4 or not _digit(value, 0) or not value[:4].isdigit():
        cannot(value, "2006")
    year = int(value[:4])
    value = value[4:]
    numbers: list[int] = []
    for separator, element, fixed, bounds, name in _TIME_FIELDS:
        value = skip(value, separator)
        parsed = _getnum(value, fixed)
        if parsed is None:
            cannot(value, element)
        number, value = parsed
        if bounds is not None and not bounds[0] <= number <= bounds[1]:
            out_of_range(name)
        numbers.append(number)
    month, day, hour, minute, second = numbers
    nanos = 0
    if len(value) >= 2 and value[0] in (0x2E, 0x2C) and _digit(value, 1):
        digits = 2
        while _digit(value, digits):
            digits += 1
        fraction = value[1 : min(digits, 10)]
        nanos = int(fraction) * 10 ** (9 - len(fraction))
        value = value[digits:]
    offset = 0
    if value[:1] == b"Z":
        value = value[1:]
    else:
        hold = value
        if len(value) < 6 or value[3] != 0x3A:
            cannot(hold, "Z07:00")
        sign, hours, minutes, value = value[0], value[1:3], value[4:6], value[6:]
        parsed_hours = _getnum(hours, True)
        parsed_minutes = _getnum(minutes, True) if parsed_hours is not None else None
        offset_hours = parsed_hours[0] if parsed_hours is not None else 0
        offset_minutes = parsed_minutes[0] if parsed_minutes is not None else 0
        if offset_minutes > 60:
            out_of_range("time zone offset minute")
        if offset_hours > 24:
            out_of_range("time zone offset hour")
        if parsed_minutes is None or sign not in (0x2B, 0x2D):
            cannot(hold, "Z07:00")
        offset = (offset_hours * 60 + offset_minutes) * 60
        if sign == 0x2D:
            offset = -offset
    if value:
        raise GoTimeError(f"parsing time {quoted}: extra text: {_time_quote(value)}")
    if not 1 <= day <= _days_in(month, year):
        out_of_range("day")
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds - offset, nanos


def format_time(instant: GoTime) -> str:
    """``metav1.Time.MarshalJSON``: RFC 3339 in UTC, whole seconds."""
    days, seconds = divmod(instant[0], 86400)
    year, month, day = _civil_from_days(days)
    year_text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    return (
        f"{year_text}-{month:02d}-{day:02d}T"
        f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"
    )
