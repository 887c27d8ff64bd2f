"""The ``format``s checked before a call is sent: those with one meaning, each as the
standard that defines it says, and what the model is told when a value is not one.

JSON Schema makes ``format`` an annotation unless a validator opts in; the formats below
are checked (the rest stay annotations):

========== ===================================================================
date       RFC 3339 ``full-date``: ``2024-05-06`` (a day the month has)
date-time  RFC 3339 ``date-time``: ``2024-05-06T07:08:09Z``, ``…09.5+02:00``; an
           offset is required; a leap second only at 23:59:60 UTC
time       RFC 3339 ``full-time``: ``07:08:09Z``, ``07:08:09.25-05:00``
uuid       RFC 9562's string form: 8-4-4-4-12 hexadecimal digits
email      RFC 5321 ``Mailbox``: a dot-string or quoted local part, ``@``, a domain
           or an address literal (``[192.0.2.1]``, ``[IPv6:2001:db8::1]``)
ipv4       RFC 2673 dotted-quad (four decimal octets, no leading zeros)
ipv6       RFC 4291 text form (no zone index)
uri        RFC 3986 ``URI``: a scheme and what follows, percent-encoded
hostname   RFC 1123 host name: dot-separated labels of letters, digits and inner
           hyphens, 63 characters each, 253 in all (one trailing dot allowed)
byte       RFC 4648 §4 base64 (``+/``, padded with ``=``), as OpenAPI says
int32      a number from -2**31 to 2**31 - 1
int64      a number from -2**63 to 2**63 - 1
float      a number an IEEE 754 single holds (at most about 3.4e38 either way)
double     a number an IEEE 754 double holds (finite)
========== ===================================================================

A string format applies to strings only, a number format to numbers only (a ``uuid`` of
an integer, an ``int64`` of a string are left alone). The checks are written here from
the standards rather than taken from jsonschema's ``FormatChecker`` (which runs them
when jsonschema finds a value's problems: `format_checker`): it checks ``date-time``,
``time``, ``uri`` and ``hostname`` only when optional packages are installed
(``rfc3339-validator``, which knows no leap seconds; ``rfc3987``, a GPL package;
``fqdn``), and ``email`` and ``uuid`` loosely (any ``@``; hyphens anywhere). Its
``date``, ``ipv4`` and ``ipv6`` are right, and ours make the same standard-library calls
(``ipaddress``); having them here lets a call whose arguments fit be checked without
importing jsonschema at all (`toolsets._quickcheck`).
"""

from __future__ import annotations

import ipaddress
import math
import re
import sys
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from jsonschema import FormatChecker

__all__ = ["FORMATS", "FORMAT_HINTS", "format_checker"]

_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_DATE: Final = re.compile(r"(\d{4})-(\d\d)-(\d\d)", re.ASCII)
_TIME: Final = r"(\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:[Zz]|([+-])(\d\d):(\d\d))"
_FULL_TIME: Final = re.compile(_TIME, re.ASCII)
_DATE_TIME: Final = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt]" + _TIME, re.ASCII)


def _is_day(year: int, month: int, day: int) -> bool:
    if not 1 <= month <= 12:
        return False
    leap = month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= _DAYS[month - 1] + leap


def _is_time(parts: tuple[str | None, ...]) -> bool:
    """RFC 3339's ``full-time`` from its matched parts: hour, minute, second, and the
    offset's sign, hours and minutes (None for ``Z``)."""
    hour, minute, second = int(parts[0] or 0), int(parts[1] or 0), int(parts[2] or 0)
    sign, off_hour, off_minute = parts[3], int(parts[4] or 0), int(parts[5] or 0)
    if hour > 23 or minute > 59 or second > 60 or off_hour > 23 or off_minute > 59:
        return False
    if second == 60:  # a leap second is the last second of a UTC day (RFC 3339 §5.7)
        offset = (off_hour * 60 + off_minute) * (-1 if sign == "-" else 1)
        if (hour * 60 + minute - offset) % 1440 != 23 * 60 + 59:
            return False
    return True


def is_date(value: object) -> bool:
    """RFC 3339 ``full-date``."""
    if not isinstance(value, str):
        return True
    found = _DATE.fullmatch(value)
    return found is not None and _is_day(*map(int, found.groups()))


def is_date_time(value: object) -> bool:
    """RFC 3339 ``date-time`` (``T`` and ``Z`` in either case)."""
    if not isinstance(value, str):
        return True
    found = _DATE_TIME.fullmatch(value)
    if found is None:
        return False
    year, month, day = map(int, found.groups()[:3])
    return _is_day(year, month, day) and _is_time(found.groups()[3:])


def is_time(value: object) -> bool:
    """RFC 3339 ``full-time`` (an offset is part of it)."""
    if not isinstance(value, str):
        return True
    found = _FULL_TIME.fullmatch(value)
    return found is not None and _is_time(found.groups())


_UUID: Final = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def is_uuid(value: object) -> bool:
    """RFC 9562 §4: 8-4-4-4-12 hexadecimal digits, either case."""
    return not isinstance(value, str) or _UUID.fullmatch(value) is not None


_ATEXT: Final = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_LABEL: Final = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_MAILBOX: Final = re.compile(
    rf"(?:{_ATEXT}+(?:\.{_ATEXT}+)*"  # Dot-string
    r'|"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*")'  # Quoted-string
    rf"@(?:({_LABEL}(?:\.{_LABEL})*)|\[([^\[\]\\]*)\])"  # Domain / address-literal
)


def is_email(value: object) -> bool:
    """RFC 5321 §4.1.2 ``Mailbox``."""
    if not isinstance(value, str):
        return True
    found = _MAILBOX.fullmatch(value)
    if found is None:
        return False
    literal = found.group(2)
    if literal is None:
        return True
    # A general address literal needs a tag IANA registered: IPv6 is the only one.
    if literal[:5].lower() == "ipv6:":
        return _is_ip(literal[5:], ipaddress.IPv6Address)
    return _is_ip(literal, ipaddress.IPv4Address)


def _is_ip(text: str, kind: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    try:
        address = kind(text)
    except ValueError:
        return False
    return not getattr(address, "scope_id", None)


def is_ipv4(value: object) -> bool:
    """RFC 2673's dotted-quad (``ipaddress``: no leading zeros)."""
    return not isinstance(value, str) or _is_ip(value, ipaddress.IPv4Address)


def is_ipv6(value: object) -> bool:
    """RFC 4291's text form, without a zone index."""
    return not isinstance(value, str) or _is_ip(value, ipaddress.IPv6Address)


_HOST_LABEL: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)


def is_hostname(value: object) -> bool:
    """RFC 1123 §2.1 host name (RFC 952's, a label may begin with a digit); the last
    label is not all digits (RFC 1123: a host name never looks like ``1.2.3.4``)."""
    if not isinstance(value, str):
        return True
    name = value[:-1] if value.endswith(".") else value
    if not name or len(name) > 253:
        return False
    labels = name.split(".")
    return all(_HOST_LABEL.fullmatch(label) for label in labels) and not labels[-1].isdigit()


_PCT: Final = r"%[0-9A-Fa-f]{2}"
_UNRESERVED_SUB: Final = r"A-Za-z0-9\-._~!$&'()*+,;="
_PCHAR: Final = rf"(?:[{_UNRESERVED_SUB}:@]|{_PCT})"
_URI: Final = re.compile(
    r"[A-Za-z][A-Za-z0-9+\-.]*:"  # scheme
    r"(?:"
    rf"//(?:(?:[{_UNRESERVED_SUB}:]|{_PCT})*@)?"  # authority: userinfo
    rf"(\[[^\[\]/?#@]*\]|(?:[{_UNRESERVED_SUB}]|{_PCT})*)"  # host
    r"(?::[0-9]*)?"  # port
    rf"(?:/{_PCHAR}*)*"  # path-abempty
    rf"|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"  # path-absolute
    rf"|{_PCHAR}+(?:/{_PCHAR}*)*"  # path-rootless
    r"|)"  # path-empty
    rf"(?:\?(?:{_PCHAR}|[/?])*)?"  # query
    rf"(?:#(?:{_PCHAR}|[/?])*)?",  # fragment
    re.ASCII,
)
_IP_FUTURE: Final = re.compile(rf"[vV][0-9A-Fa-f]+\.[{_UNRESERVED_SUB}:]+", re.ASCII)


def is_uri(value: object) -> bool:
    """RFC 3986 §3 ``URI`` (absolute: with a scheme; a fragment allowed)."""
    if not isinstance(value, str):
        return True
    found = _URI.fullmatch(value)
    if found is None:
        return False
    host = found.group(1)
    if not host or host[0] != "[":
        return True
    inner = host[1:-1]
    if _IP_FUTURE.fullmatch(inner):
        return True
    return "%" not in inner and _is_ip(inner, ipaddress.IPv6Address)


_BASE64: Final = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def is_byte(value: object) -> bool:
    """RFC 4648 §4 base64, padded (OpenAPI's ``byte``)."""
    return not isinstance(value, str) or _BASE64.fullmatch(value) is not None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _within(low: int, high: int) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        return not _number(value) or low <= value <= high  # type: ignore[operator]

    return check


_FLOAT_MAX: Final = 3.4028234663852886e38
"""The largest finite IEEE 754 single."""


def is_float(value: object) -> bool:
    """A number an IEEE 754 single holds."""
    if not _number(value):
        return True
    return -_FLOAT_MAX <= value <= _FLOAT_MAX  # type: ignore[operator]  # NaN fails too


def is_double(value: object) -> bool:
    """A number an IEEE 754 double holds: finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    return not _number(value) or abs(value) <= sys.float_info.max  # type: ignore[arg-type]


FORMATS: Final[Mapping[str, Callable[[object], bool]]] = {
    "date": is_date,
    "date-time": is_date_time,
    "time": is_time,
    "uuid": is_uuid,
    "email": is_email,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "uri": is_uri,
    "hostname": is_hostname,
    "byte": is_byte,
    "int32": _within(-(2**31), 2**31 - 1),
    "int64": _within(-(2**63), 2**63 - 1),
    "float": is_float,
    "double": is_double,
}
"""The checks, by format: True when the value is one (or is not of the type the format
applies to); they never raise."""

FORMAT_HINTS: Final[Mapping[str, str]] = {
    "date": "a date as RFC 3339 writes it, e.g. 2024-05-06",
    "date-time": (
        "a date and time with an offset as RFC 3339 writes it, e.g. 2024-05-06T07:08:09Z "
        "or 2024-05-06T09:08:09+02:00"
    ),
    "time": "a time with an offset as RFC 3339 writes it, e.g. 07:08:09Z or 09:08:09+02:00",
    "uuid": (
        "a UUID: 32 hexadecimal digits as 8-4-4-4-12, e.g. 123e4567-e89b-12d3-a456-426614174000"
    ),
    "email": "an email address, e.g. name@example.com",
    "ipv4": "an IPv4 address, e.g. 192.0.2.1",
    "ipv6": "an IPv6 address, e.g. 2001:db8::1",
    "uri": "an absolute URI with its scheme, percent-encoded, e.g. https://example.com/a?b=c",
    "hostname": "a host name, e.g. api.example.com",
    "byte": "base64 (RFC 4648: A-Z a-z 0-9 + /, padded with = to a multiple of 4)",
    "int32": f"a whole number from {-(2**31)} to {2**31 - 1}",
    "int64": f"a whole number from {-(2**63)} to {2**63 - 1}",
    "float": "a number within a 32-bit float's range (about ±3.4e38)",
    "double": "a finite number",
}
"""What the model is told a value of each checked format must be."""


@cache
def format_checker() -> FormatChecker:
    """A jsonschema ``FormatChecker`` of `FORMATS` alone, for jsonschema's validators
    (made once: it imports jsonschema)."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    for name, check in FORMATS.items():
        checker.checks(name)(check)
    return checker
