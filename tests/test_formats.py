"""The formats checked before a call is sent: each format's check against values the
standard that defines it accepts and refuses (many of them the JSON Schema test suite's
own cases), and what the model is told."""

from __future__ import annotations

import pytest

from toolsets._formats import FORMAT_HINTS, FORMATS, format_checker
from toolsets._validation import ArgumentChecker

CASES: dict[str, tuple[list[object], list[object]]] = {
    "date": (
        ["1963-06-19", "2020-02-29", "2000-02-29", "0000-01-01", 19630619],
        [
            "2020-01-32",
            "2021-02-29",
            "1900-02-29",
            "06/19/1963",
            "2013-350",
            "1998-1-20",
            "1998-13-01",
            "2020-11-31",
            "1963-06-1\u09ea",
            "20230328",
            "2023-W01",
            "yesterday",
        ],
    ),
    "date-time": (
        [
            "1963-06-19T08:30:06.283185Z",
            "1963-06-19T08:30:06Z",
            "1937-01-01T12:00:27.87+00:20",
            "1990-12-31T15:59:50.123-08:00",
            "1998-12-31T23:59:60Z",
            "1963-06-19t08:30:06z",
            "1998-12-31T15:59:60.123-08:00",
            "2024-02-29T00:00:00Z",
        ],
        [
            "1998-12-31T23:59:61Z",
            "1998-12-31T23:58:60Z",
            "1998-12-31T22:59:60Z",
            "yesterday",
            "1990-12-31T15:59:59-24:00",
            "1990-12-31T15:59:59-23:60",
            "2013-350T01:01:01",
            "2024-05-06T07:08:09",
            "2024-05-06 07:08:09Z",
            "2024-05-06T07:08:09Z\n",
            "2023-02-29T00:00:00Z",
            "1963-06-1\u09eaT00:00:00Z",
            "2024-05-06T07:08:09+0200",
        ],
    ),
    "time": (
        [
            "08:30:06Z",
            "23:59:60Z",
            "15:59:60-08:00",
            "08:30:06.283185Z",
            "08:30:06+00:20",
            "08:30:06z",
            "12:00:00+00:00",
        ],
        [
            "008:030:006Z",
            "8:3:6Z",
            "22:59:60Z",
            "23:58:60Z",
            "24:00:00Z",
            "00:60:00Z",
            "00:00:61Z",
            "01:02:03+24:00",
            "01:02:03+00:60",
            "01:02:03Z+00:30",
            "12:00:00",
            "08:30:06 PST",
            "1\u09e8:00:00Z",
        ],
    ),
    "uuid": (
        [
            "2EB8AA08-AA98-11EA-B4AA-73B441D16380",
            "2eb8aa08-aa98-11ea-b4aa-73b441d16380",
            "00000000-0000-0000-0000-000000000000",
            29,
        ],
        [
            "29",
            "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
            "2eb8aa08-aa98-11ea-73b441d16380",
            "2eb8aa08-aa98-11ea-b4ga-73b441d16380",
            "2eb8aa08aa9811eab4aa73b441d16380",
            "2eb8-aa08-aa98-11ea-b4aa73b44-1d16380",
            "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}",
        ],
    ),
    "email": (
        [
            "joe.bloggs@example.com",
            "te~st@example.com",
            '"joe bloggs"@example.com',
            '"joe@bloggs"@example.com',
            "joe.bloggs@[127.0.0.1]",
            "joe.bloggs@[IPv6:::1]",
            "te.s.t@example.com",
            "x@localhost",
        ],
        [
            "2962",
            ".test@example.com",
            "test.@example.com",
            "te..st@example.com",
            "a@",
            "@b.c",
            "joe.bloggs@invalid=domain.com",
            "joe.bloggs@[127.0.0.300]",
            "a b@c.com",
        ],
    ),
    "ipv4": (
        ["192.168.0.1", "0.0.0.0", "255.255.255.255"],
        ["127.0.0.0.1", "256.256.256.256", "087.10.0.1", "1", "192.168.1.0/24", "1\u09e87.0.0.1"],
    ),
    "ipv6": (
        ["::1", "::abef", "1:d6::42", "2001:db8::1", "::ffff:192.168.0.1"],
        ["12345::", "::abcef", ":::1", "fe80::a%eth1", "1::d6::42", "::laptop", ""],
    ),
    "uri": (
        [
            "http://foo.bar/?baz=qux#quux",
            "http://foo.com/blah_(wikipedia)_blah#cite-1",
            "http://foo.bar/?q=Test%20URL-encoded%20stuff",
            "ldap://[2001:db8::7]/c=GB?one",
            "mailto:John.Doe@example.com",
            "urn:oasis:names:specification:docbook:dtd:xml",
            "tel:+1-816-555-1212",
            "http://[v1.fe]/",
            "telnet://192.0.2.16:80/",
        ],
        [
            "//foo.bar/?baz=qux#quux",
            "/abc",
            "abc",
            "http:// shouldfail.com",
            ":// fail",
            "bar,baz:foo",
            "http://example.com/%zz",
            "http://[::1%eth0]/",
            "https://a.b/c d",
        ],
    ),
    "hostname": (
        ["www.example.com", "xn--4gbwdl.xn--wgbh1c", "hostname", "h0stn4me", "1host", "a.b."],
        [
            "-hostname",
            "hostname-",
            "host_name",
            "",
            ".",
            ".example.com",
            "example..com",
            "a" * 64 + ".com",
            "1.2.3.4",
            ("a" * 60 + ".") * 5 + "com",
        ],
    ),
    "byte": (
        ["", "aGVsbG8=", "aGVsbA==", "aGVs"],
        ["aGVsbG8", "aGVsbA=", "a-_b", "aGVs\n", "%%%%"],
    ),
    "int32": ([0, 2**31 - 1, -(2**31), 1.5, "3000000000"], [2**31, -(2**31) - 1, 3e10]),
    "int64": ([2**63 - 1, -(2**63), 1e18], [2**63, -(2**63) - 1, 1e19]),
    "float": ([3.4e38, -3.4e38, 1, 10**38], [3.5e38, -(10**39), float("inf"), float("nan")]),
    "double": ([1.7e308, 10**308, -1.5], [float("inf"), float("nan"), 10**309]),
}


def test_every_format_with_one_meaning_is_checked_and_told_how_to_write() -> None:
    assert set(CASES) == set(FORMATS) == set(FORMAT_HINTS)
    checker = format_checker()
    assert set(checker.checkers) == set(FORMATS)  # what jsonschema checks when it reports


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_format_accepts_what_its_standard_does_and_refuses_the_rest(name: str) -> None:
    accepted, refused = CASES[name]
    check = FORMATS[name]
    assert [value for value in accepted if not check(value)] == []
    assert [value for value in refused if check(value)] == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_not_of_its_format_names_its_field_and_says_how_to_write_it(name: str) -> None:
    refused = CASES[name][1][0]
    kind = "string" if isinstance(refused, str) else "number"
    schema = {"type": "object", "properties": {"field": {"type": kind, "format": name}}}
    checker = ArgumentChecker(schema, tool_name="tool")
    (problem,) = checker.problems({"field": refused})
    assert problem[0] == "field"
    assert FORMAT_HINTS[name] in problem[1]
    assert checker.problems({"field": CASES[name][0][0]}) == []


def test_formats_no_standard_defines_one_way_are_annotations() -> None:
    schema = {
        "type": "object",
        "properties": {
            "colour": {"type": "string", "format": "color"},
            "secret": {"type": "string", "format": "password"},
            "big": {"type": "string", "format": "int64"},  # Google's: an integer as text
        },
    }
    checker = ArgumentChecker(schema, tool_name="tool")
    assert checker.problems({"colour": "not a colour", "secret": "x", "big": "12345"}) == []


def test_a_results_formats_are_annotations_where_the_checker_is_told_so() -> None:
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}}
    results = ArgumentChecker(schema, tool_name="tool", checks="results", formats=False)
    assert results.first_problem({"when": "2024-05-06T07:08:09"}) is None  # naive: pydantic's
    arguments = ArgumentChecker(schema, tool_name="tool")
    assert arguments.first_problem({"when": "2024-05-06T07:08:09"}) is not None
