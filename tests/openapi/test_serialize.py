"""Parameter and body serialization: the exact wire text for every OpenAPI style (the
"Style Examples" table of OpenAPI 3.1.2, row by row) and every body media type."""

from __future__ import annotations

import email.policy
import pickle
from collections.abc import Mapping
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

import pytest

from tests.openapi.helpers import (
    COOKIE_TABLE,
    HEADER_TABLE,
    PATH_TABLE,
    QUERY_TABLE,
    REJECTED,
    VALUES,
)
from toolsets.openapi._model import Encoding, MediaType, Parameter
from toolsets.openapi._serialize import (
    EncodedBody,
    SerializationError,
    cookie_pairs,
    encode_body,
    header_value,
    path_value,
    query_pairs,
)


def query(param: Parameter, value: object) -> str:
    return "&".join(f"{key}={text}" for key, text in query_pairs(param, value))


def cookies(param: Parameter, value: object) -> str:
    return "; ".join(f"{key}={text}" for key, text in cookie_pairs(param, value))


def table(rows: Mapping[tuple[str, bool], tuple[object, ...]]) -> list[Any]:
    return [
        pytest.param(style, explode, VALUES[kind], expected, id=f"{style}-{explode}-{kind}")
        for (style, explode), row in rows.items()
        for kind, expected in zip(VALUES, row, strict=True)
    ]


# -- the spec's table, location by location ------------------------------------------------


@pytest.mark.parametrize(("style", "explode", "value", "expected"), table(PATH_TABLE))
def test_path_parameters_expand_as_the_spec_table_shows(
    style: str, explode: bool, value: object, expected: object
) -> None:
    param = Parameter(name="color", location="path", required=True, style=style, explode=explode)
    if expected is REJECTED:
        with pytest.raises(SerializationError) as caught:
            path_value(param, value)
        assert (caught.value.location, caught.value.field) == ("path", "color")
    else:
        assert path_value(param, value) == expected


@pytest.mark.parametrize(("style", "explode", "value", "expected"), table(HEADER_TABLE))
def test_header_parameters_expand_as_the_spec_table_shows(
    style: str, explode: bool, value: object, expected: str
) -> None:
    param = Parameter(name="color", location="header", style=style, explode=explode)
    assert header_value(param, value) == expected


@pytest.mark.parametrize(("style", "explode", "value", "expected"), table(QUERY_TABLE))
def test_query_parameters_expand_as_the_spec_table_shows(
    style: str, explode: bool, value: object, expected: str
) -> None:
    param = Parameter(name="color", location="query", style=style, explode=explode)
    assert query(param, value) == expected


@pytest.mark.parametrize(("style", "explode", "value", "expected"), table(COOKIE_TABLE))
def test_cookie_parameters_expand_as_the_spec_table_shows(
    style: str, explode: bool, value: object, expected: str
) -> None:
    param = Parameter(name="color", location="cookie", style=style, explode=explode)
    assert cookies(param, value) == expected


@pytest.mark.parametrize(("style", "explode", "value", "expected"), table(QUERY_TABLE))
def test_form_body_properties_with_a_style_expand_like_query_parameters(
    style: str, explode: bool, value: object, expected: str
) -> None:
    media = MediaType(
        content_type="application/x-www-form-urlencoded",
        encoding={"color": Encoding(style=style, explode=explode)},
    )
    body = encode_body(media, {"color": value})
    assert body == EncodedBody(
        content=expected.encode(), content_type="application/x-www-form-urlencoded"
    )


# -- path ----------------------------------------------------------------------------------


def path(value: object, *, style: str = "simple", explode: bool = False) -> str:
    param = Parameter(name="id", location="path", required=True, style=style, explode=explode)
    return path_value(param, value)


def test_path_values_percent_encode_everything_but_unreserved_characters() -> None:
    assert path("a/b?c#d%e f") == "a%2Fb%3Fc%23d%25e%20f"
    assert path("AZaz09-._~") == "AZaz09-._~"
    assert path(":@!$&'()*+,;=[]") == "%3A%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%5B%5D"
    assert path("café ☕") == "caf%C3%A9%20%E2%98%95"


def test_path_delimiters_stay_literal_while_the_same_characters_in_data_are_encoded() -> None:
    assert path(["a,b", "c;d"]) == "a%2Cb,c%3Bd"
    assert path({"k=": "v.w"}, explode=True) == "k%3D=v.w"
    assert path(["x.y", "z"], style="label", explode=True) == ".x.y.z"
    assert path(["a;b"], style="matrix", explode=True) == ";id=a%3Bb"


@pytest.mark.parametrize("value", [".", "..", ["."], [".."], {}, []])
def test_path_values_that_would_change_the_path_are_rejected(value: object) -> None:
    with pytest.raises(SerializationError) as caught:
        path(value)
    assert caught.value.field == "id"
    assert caught.value.location == "path"


def test_a_label_value_that_would_make_a_dot_segment_is_rejected() -> None:
    with pytest.raises(SerializationError, match="would change the path"):
        path(".", style="label")
    assert path("...") == "..."
    assert path(".", style="matrix") == ";id=."


def test_matrix_drops_the_equals_sign_of_empty_values_as_rfc_6570_does() -> None:
    assert path(["", "x"], style="matrix", explode=True) == ";id;id=x"
    assert path({"a": "", "b": "x"}, style="matrix", explode=True) == ";a;b=x"


def test_scalars_are_written_as_json_numbers_and_booleans() -> None:
    assert path(True) == "true"
    assert path(False) == "false"
    assert path(42) == "42"
    assert path(5.0) == "5"
    assert path(-0.0) == "0"
    assert path(1.5) == "1.5"
    assert path(1e20) == "1e%2B20"
    assert header(1e20) == "1e+20"
    assert path(2.0**53) == "9007199254740992.0"


def test_nested_arrays_and_objects_inside_a_styled_value_are_sent_as_json() -> None:
    assert path([[1, 2], {"a": "é"}]) == "%5B1%2C2%5D,%7B%22a%22%3A%22%C3%A9%22%7D"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (float("nan"), "nan is not a number that can be sent"),
        (float("inf"), "inf is not a number that can be sent"),
        (b"raw", "a value of type bytes cannot be sent here"),
        ({1: "x"}, "object keys must be strings, not int"),
        ("\ud800", "'\\ud800' cannot be encoded in utf-8"),
        ({1, 2}, "a value of type set cannot be sent here"),
        ([[{1, 2}]], "cannot be written as JSON (Object of type set is not JSON serializable)"),
    ],
)
def test_values_that_cannot_be_written_are_rejected_with_the_reason(
    value: object, reason: str
) -> None:
    with pytest.raises(SerializationError) as caught:
        path(value)
    assert caught.value.reason == reason
    assert str(caught.value) == f"path parameter 'id': {reason}"


def test_a_content_typed_path_parameter_is_json_then_percent_encoded() -> None:
    param = Parameter(name="f", location="path", required=True, content_type="application/json")
    assert path_value(param, {"a": [1, "x/y"]}) == "%7B%22a%22%3A%5B1%2C%22x%2Fy%22%5D%7D"
    text = Parameter(name="f", location="path", required=True, content_type="text/plain")
    assert path_value(text, "a b") == "a%20b"
    assert path_value(text, {"a": 1}) == "%7B%22a%22%3A1%7D"
    with pytest.raises(SerializationError):
        path_value(text, "..")


def test_a_style_that_paths_do_not_have_is_rejected() -> None:
    with pytest.raises(SerializationError) as caught:
        path("x", style="form")
    assert caught.value.reason == "style 'form' is not defined for path parameters"


# -- query ---------------------------------------------------------------------------------

RESERVED_MIX = "a/b?c:d@e!$'()*,;=f&g+h[i]#j%20k%zz~ é"


def test_query_values_percent_encode_every_reserved_character() -> None:
    param = Parameter(name="q", location="query")
    assert query_pairs(param, RESERVED_MIX) == [
        (
            "q",
            "a%2Fb%3Fc%3Ad%40e%21%24%27%28%29%2A%2C%3B%3Df%26g%2Bh%5Bi%5D%23j%2520k%25zz~%20%C3%A9",
        )
    ]


def test_allow_reserved_passes_reserved_characters_but_never_lets_a_value_split() -> None:
    param = Parameter(name="q", location="query", allow_reserved=True)
    # Reserved characters and %XX triples pass; "[]#" (not allowed in a query) and
    # "&=+" (form delimiters) are still encoded, and a lone "%" becomes "%25".
    assert query_pairs(param, RESERVED_MIX) == [
        ("q", "a/b?c:d@e!$'()*,;%3Df%26g%2Bh%5Bi%5D%23j%20k%25zz~%20%C3%A9")
    ]
    assert query_pairs(param, "%41%e9") == [("q", "%41%e9")]


def test_allow_reserved_applies_to_values_not_names() -> None:
    param = Parameter(name="q", location="query", allow_reserved=True)
    assert query_pairs(param, {"a/b": "c/d"}) == [("a%2Fb", "c/d")]
    deep = Parameter(name="f", location="query", style="deepObject", allow_reserved=True)
    assert query(deep, {"a/b": "c/d&e"}) == "f%5Ba%2Fb%5D=c/d%26e"


def test_query_names_are_percent_encoded_as_the_spec_shows_for_illegal_names() -> None:
    assert query_pairs(Parameter(name="❤️", location="query"), "love!") == [
        ("%E2%9D%A4%EF%B8%8F", "love%21")
    ]


def test_deep_objects_nest_objects_by_key_and_arrays_by_index() -> None:
    param = Parameter(name="filter", location="query", style="deepObject")
    value = {
        "status": "open",
        "owner": {"name": "ann", "teams": ["a", "b"]},
        "items": [{"id": 1}, {"id": 2, "tags": []}],
        "empty": {},
        "none": None,
        "flag": True,
    }
    decoded = [
        (key.replace("%5B", "[").replace("%5D", "]"), text)
        for key, text in query_pairs(param, value)
    ]
    assert decoded == [
        ("filter[status]", "open"),
        ("filter[owner][name]", "ann"),
        ("filter[owner][teams][0]", "a"),
        ("filter[owner][teams][1]", "b"),
        ("filter[items][0][id]", "1"),
        ("filter[items][1][id]", "2"),
        ("filter[none]", ""),
        ("filter[flag]", "true"),
    ]


def test_empty_arrays_and_objects_send_no_query_pairs() -> None:
    for style in ("form", "spaceDelimited", "pipeDelimited", "deepObject"):
        for explode in (False, True):
            param = Parameter(name="c", location="query", style=style, explode=explode)
            assert query_pairs(param, []) == []
            assert query_pairs(param, {}) == []


def test_a_content_typed_query_parameter_is_compact_json_percent_encoded() -> None:
    param = Parameter(name="coordinates", location="query", content_type="application/json")
    assert query_pairs(param, {"lat": 1.5, "long": -2}) == [
        ("coordinates", "%7B%22lat%22%3A1.5%2C%22long%22%3A-2%7D")
    ]
    assert query_pairs(param, "é") == [("coordinates", "%22%C3%A9%22")]
    reserved = Parameter(
        name="q", location="query", content_type="application/json", allow_reserved=True
    )
    assert query_pairs(reserved, "a/b") == [("q", "%22a%2Fb%22")]


def test_a_style_that_queries_do_not_have_is_rejected() -> None:
    with pytest.raises(SerializationError) as caught:
        query_pairs(Parameter(name="q", location="query", style="matrix"), "x")
    assert (caught.value.location, caught.value.field) == ("query", "q")
    assert caught.value.reason == "style 'matrix' is not defined for query parameters"


# -- headers -------------------------------------------------------------------------------


def header(value: object, **options: Any) -> str:
    return header_value(
        Parameter(name="X-Token", location="header", style="simple", **options), value
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a\r\nX-Evil: 1", "contains a line break"),
        ("a\nb", "contains a line break"),
        ("a\rb", "contains a line break"),
        ("a\x00b", "contains the control character U+0000"),
        ("a\x1bb", "contains the control character U+001B"),
        ("a\x7fb", "contains the control character U+007F"),
        ("café", "contains 'é', which is not ASCII; header values are ASCII"),
        (["ok", "bad\n"], "contains a line break"),
    ],
)
def test_headers_refuse_line_breaks_controls_and_non_ascii(value: object, reason: str) -> None:
    with pytest.raises(SerializationError) as caught:
        header(value)
    assert caught.value.location == "header"
    assert caught.value.field == "X-Token"
    assert caught.value.reason == reason
    assert str(caught.value) == f"header 'X-Token': {reason}"


def test_headers_are_sent_unencoded_and_trimmed() -> None:
    assert header("Bearer a/b+c=%20") == "Bearer a/b+c=%20"
    assert header("  a\tb  ") == "a\tb"
    assert header(["a,b", "c"]) == "a,b,c"
    assert header({"k": "v w"}, explode=True) == "k=v w"
    assert header(None) == ""


def test_a_content_typed_header_is_json_with_non_ascii_escaped() -> None:
    param = Parameter(name="X-Meta", location="header", content_type="application/json")
    assert header_value(param, {"name": "café", "n": [1]}) == '{"name":"caf\\u00e9","n":[1]}'
    text = Parameter(name="X-Note", location="header", content_type="text/plain")
    assert header_value(text, "plain, text") == "plain, text"
    with pytest.raises(SerializationError, match="line break"):
        header_value(text, "a\nb")


def test_a_style_that_headers_do_not_have_is_rejected() -> None:
    with pytest.raises(SerializationError, match="style 'form' is not defined for headers"):
        header_value(Parameter(name="X", location="header", style="form"), "x")


# -- cookies -------------------------------------------------------------------------------


def test_cookie_values_percent_encode_separators_spaces_and_controls() -> None:
    param = Parameter(name="session id", location="cookie", style="form")
    assert cookie_pairs(param, 'a;b,c d\t"é\r\n') == [
        ("session%20id", "a%3Bb%2Cc%20d%09%22%C3%A9%0D%0A")
    ]
    assert cookies(Parameter(name="c", location="cookie", explode=False), ["a;b", "c"]) == (
        "c=a%3Bb,c"
    )


def test_a_text_content_cookie_is_sent_as_it_is_or_rejected() -> None:
    param = Parameter(name="token", location="cookie", content_type="text/plain")
    assert cookie_pairs(param, "abc/def+ghi==") == [("token", "abc/def+ghi==")]
    for bad in ("a;b", "a b", "a,b", 'a"b', "a\\b", "é", "a\nb"):
        with pytest.raises(SerializationError) as caught:
            cookie_pairs(param, bad)
        assert caught.value.location == "cookie"
        assert caught.value.reason.endswith("which a cookie value cannot hold")


def test_a_json_content_cookie_is_percent_encoded() -> None:
    param = Parameter(name="prefs", location="cookie", content_type="application/json")
    assert cookie_pairs(param, {"a": "b c"}) == [("prefs", "%7B%22a%22%3A%22b%20c%22%7D")]


def test_a_style_that_cookies_do_not_have_is_rejected() -> None:
    with pytest.raises(SerializationError, match="style 'simple' is not defined for cookies"):
        cookie_pairs(Parameter(name="c", location="cookie", style="simple"), "x")


# -- the error -----------------------------------------------------------------------------


def test_serialization_errors_name_their_field_and_survive_pickling() -> None:
    error = SerializationError("body", "file", "is wrong")
    assert isinstance(error, ValueError)
    assert str(error) == "body property 'file': is wrong"
    assert str(SerializationError("body", "", "is wrong")) == "body: is wrong"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.location, copy.field, copy.reason, str(copy)) == (
        "body",
        "file",
        "is wrong",
        "body property 'file': is wrong",
    )


# -- JSON bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/vnd.api+json", "application/json; charset=utf-8"],
)
def test_json_bodies_are_compact_utf8(content_type: str) -> None:
    body = encode_body(MediaType(content_type=content_type), {"name": "café", "n": [1, 2.5, None]})
    assert body == EncodedBody(
        content='{"name":"café","n":[1,2.5,null]}'.encode(), content_type=content_type
    )


def test_a_json_body_that_json_cannot_hold_is_rejected() -> None:
    with pytest.raises(SerializationError) as caught:
        encode_body(MediaType(content_type="application/json"), {"x": float("nan")})
    assert (caught.value.location, caught.value.field) == ("body", "")
    assert caught.value.reason.startswith("cannot be written as JSON")


# -- form bodies ---------------------------------------------------------------------------

FORM = "application/x-www-form-urlencoded"


def form(value: object, **encoding: Encoding) -> bytes:
    body = encode_body(MediaType(content_type=FORM, encoding=encoding), value)
    assert body.content_type == FORM
    return body.content


def test_form_bodies_without_encodings_nest_objects_with_brackets() -> None:
    content = form(
        {
            "amount": 100,
            "note": "a b~c&d=e+f",
            "metadata": {"order": "42", "tags": ["x", "y"]},
            "items": [{"price": "p_1", "quantity": 2}],
            "expand": ["customer", "invoice"],
            "skipped": None,
            "blank": "",
        }
    )
    assert content == (
        b"amount=100&note=a%20b%7Ec%26d%3De%2Bf"
        b"&metadata%5Border%5D=42&metadata%5Btags%5D%5B0%5D=x&metadata%5Btags%5D%5B1%5D=y"
        b"&items%5B0%5D%5Bprice%5D=p_1&items%5B0%5D%5Bquantity%5D=2"
        b"&expand=customer&expand=invoice&blank="
    )


def test_form_properties_with_a_content_type_are_serialized_in_it() -> None:
    # The spec's "URL Encoded Form with JSON Values" example, and its binary one.
    content = form(
        {
            "id": "f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
            "address": {"streetAddress": "123 Example Dr.", "zip": "99999+1234"},
            "icon": "iVBORw0KGgo=",
            "label": "x",
        },
        address=Encoding(content_type="application/json"),
        icon=Encoding(content_type="image/png, image/jpeg"),
        label=Encoding(content_type="application/json"),
    )
    assert content == (
        b"id=f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
        b"&address=%7B%22streetAddress%22%3A%22123%20Example%20Dr.%22%2C%22zip%22%3A%2299999%2B1234%22%7D"
        b"&icon=iVBORw0KGgo%3D&label=%22x%22"
    )


def test_form_properties_honour_allow_reserved() -> None:
    content = form({"path": "a/b:c?d=e&f", "other": "a/b"}, path=Encoding(allow_reserved=True))
    assert content == b"path=a/b:c?d%3De%26f&other=a%2Fb"


def test_form_property_styles_default_explode_as_the_spec_says() -> None:
    assert form({"c": ["a", "b"]}, c=Encoding(style="form")) == b"c=a&c=b"
    assert form({"c": ["a", "b"]}, c=Encoding(explode=False)) == b"c=a,b"
    assert form({"c": ["a", "b"]}, c=Encoding(style="pipeDelimited")) == b"c=a%7Cb"


def test_a_form_body_must_be_an_object() -> None:
    with pytest.raises(SerializationError) as caught:
        form(["a"])
    assert (
        caught.value.reason == "must be an object to be sent as application/x-www-form-urlencoded"
    )


def test_a_form_property_error_names_the_property() -> None:
    with pytest.raises(SerializationError) as caught:
        form({"ok": 1, "bad": {"x": float("inf")}})
    assert (caught.value.location, caught.value.field) == ("body", "bad")
    assert str(caught.value) == "body property 'bad': inf is not a number that can be sent"
    with pytest.raises(SerializationError) as styled:
        form({"c": "x"}, c=Encoding(style="matrix"))
    assert styled.value.field == "c"
    assert styled.value.reason == "style 'matrix' is not defined for body properties"


# -- multipart bodies ----------------------------------------------------------------------

MULTIPART = "multipart/form-data"


def boundary_of(body: EncodedBody) -> str:
    prefix = f"{MULTIPART}; boundary="
    assert body.content_type.startswith(prefix)
    boundary = body.content_type.removeprefix(prefix)
    assert 1 <= len(boundary) <= 70
    return boundary


OCTETS = "Content-Type: application/octet-stream"
JSON_PART = "Content-Type: application/json"


def field(name: str, filename: str | None = None) -> str:
    """A part's Content-Disposition header line."""
    line = f'Content-Disposition: form-data; name="{name}"'
    return line if filename is None else f'{line}; filename="{filename}"'


def framed(boundary: str, *parts: tuple[list[str], bytes]) -> bytes:
    """The RFC 7578 framing, written out: delimiter, headers, blank line, content."""
    out = b""
    for headers, content in parts:
        out += f"--{boundary}\r\n".encode()
        out += "".join(f"{line}\r\n" for line in headers).encode()
        out += b"\r\n" + content + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def parse(body: EncodedBody) -> list[EmailMessage]:
    head = f"Content-Type: {body.content_type}\r\n\r\n".encode()
    message = BytesParser(policy=email.policy.HTTP).parsebytes(head + body.content)
    assert isinstance(message, EmailMessage)
    assert message.is_multipart()
    return list(message.iter_parts())  # type: ignore[arg-type]


UPLOAD_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "count": {"type": "integer"},
        "profileImage": {},
        "attachments": {"type": "array", "items": {"type": "string", "format": "binary"}},
        "addresses": {"type": "array", "items": {"type": "object"}},
        "meta": {"type": "object"},
        "checksum": {"type": "string", "format": "byte"},
    },
}


def test_multipart_bodies_are_framed_exactly_as_rfc_7578_says() -> None:
    media = MediaType(content_type=MULTIPART, schema=UPLOAD_SCHEMA)
    value = {
        "id": "f81d4fae",
        "count": 3,
        "profileImage": {
            "content_base64": "iVBORw0K",
            "filename": "me.png",
            "content_type": "image/png",
        },
        "attachments": ["first file\r\n--not-a-boundary", {"content": "é", "filename": "b.txt"}],
        "addresses": [{"city": "Oslo"}, {"city": "Rome"}],
        "meta": {"a": [1]},
        "checksum": "q83v",
        "skipped": None,
    }
    body = encode_body(media, value)
    boundary = boundary_of(body)
    assert body.content == framed(
        boundary,
        ([field("id")], b"f81d4fae"),
        ([field("count")], b"3"),
        (
            [
                field("profileImage", "me.png"),
                "Content-Type: image/png",
            ],
            b"\x89PNG\r\n",
        ),
        (
            [
                field("attachments", "attachments"),
                OCTETS,
            ],
            b"first file\r\n--not-a-boundary",
        ),
        (
            [
                field("attachments", "b.txt"),
                OCTETS,
            ],
            "é".encode(),
        ),
        (
            [field("addresses"), JSON_PART],
            b'{"city":"Oslo"}',
        ),
        (
            [field("addresses"), JSON_PART],
            b'{"city":"Rome"}',
        ),
        (
            [field("meta"), JSON_PART],
            b'{"a":[1]}',
        ),
        (
            [field("checksum"), OCTETS],
            b"q83v",
        ),
    )

    parts = parse(body)
    assert [part.get_param("name", header="content-disposition") for part in parts] == [
        "id",
        "count",
        "profileImage",
        "attachments",
        "attachments",
        "addresses",
        "addresses",
        "meta",
        "checksum",
    ]
    assert [part.get_filename() for part in parts][2:5] == ["me.png", "attachments", "b.txt"]
    assert parts[2].get_content_type() == "image/png"
    assert parts[2].get_payload(decode=True) == b"\x89PNG\r\n"
    assert parts[3].get_payload(decode=True) == b"first file\r\n--not-a-boundary"


def test_each_multipart_body_gets_a_fresh_random_boundary() -> None:
    media = MediaType(content_type=MULTIPART)
    first, second = encode_body(media, {"a": "x"}), encode_body(media, {"a": "x"})
    assert boundary_of(first) != boundary_of(second)
    assert boundary_of(first).startswith("toolsets-")


def test_an_empty_multipart_body_is_just_the_closing_delimiter() -> None:
    body = encode_body(MediaType(content_type=MULTIPART), {})
    assert body.content == f"--{boundary_of(body)}--\r\n".encode()


def test_a_multipart_media_type_keeps_its_parameters_but_not_a_stale_boundary() -> None:
    media = MediaType(content_type="multipart/mixed; charset=utf-8; boundary=old")
    body = encode_body(media, {"a": "x"})
    assert body.content_type.startswith("multipart/mixed; charset=utf-8; boundary=toolsets-")


def test_multipart_names_and_filenames_are_escaped_not_spliced() -> None:
    media = MediaType(
        content_type=MULTIPART, schema={"properties": {'a"\r\nb': {"format": "binary"}}}
    )
    body = encode_body(media, {'a"\r\nb': {"content": "x", "filename": 'evil"\r\nX: 1.txt'}})
    head = field("a%22%0D%0Ab", "evil%22%0D%0AX: 1.txt")
    assert body.content == framed(boundary_of(body), ([head, OCTETS], b"x"))
    assert (
        encode_body(MediaType(content_type=MULTIPART), {"ünï": "x"}).content.count(
            'name="ünï"'.encode()
        )
        == 1
    )
    with pytest.raises(SerializationError) as caught:
        encode_body(MediaType(content_type=MULTIPART), {"a\x00": "x"})
    assert caught.value.field == "a\x00"
    assert caught.value.reason == "the name 'a\\x00' contains the control character U+0000"


def test_multipart_encoding_content_types_decide_how_parts_are_written() -> None:
    media = MediaType(
        content_type=MULTIPART,
        schema={
            "properties": {
                "addresses": {"type": "array", "items": {"type": "object"}},
                "doc": {"type": "string"},
                "icon": {"type": "string", "contentEncoding": "base64url"},
                "ids": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string"},
                "data": {"type": "object"},
            }
        },
        encoding={
            "addresses": Encoding(content_type="application/json"),
            "doc": Encoding(content_type="application/xml; charset=iso-8859-1"),
            "icon": Encoding(content_type="image/png, image/jpeg"),
            "note": Encoding(content_type="text/*"),
            "data": Encoding(content_type="text/plain"),
        },
    )
    value = {
        "addresses": [{"city": "Oslo"}],
        "doc": "<a>é</a>",
        "icon": "iVBO",
        "ids": ["1", "2"],
        "note": "hi",
        "data": {"k": 1},
    }
    body = encode_body(media, value)
    assert body.content == framed(
        boundary_of(body),
        ([field("addresses"), JSON_PART], b'[{"city":"Oslo"}]'),
        ([field("doc"), "Content-Type: application/xml; charset=iso-8859-1"], b"<a>\xe9</a>"),
        ([field("icon"), "Content-Type: image/png"], b"iVBO"),
        ([field("ids")], b"1"),
        ([field("ids")], b"2"),
        ([field("note")], b"hi"),
        ([field("data"), "Content-Type: text/plain"], b'{"k":1}'),
    )


def test_multipart_files_take_their_type_from_the_file_or_the_declarations() -> None:
    schema = {
        "properties": {
            "photo": {"contentMediaType": "image/png"},
            "scan": {"type": "string", "format": "binary"},
            "any": {"type": "string", "format": "binary"},
        }
    }
    media = MediaType(
        content_type=MULTIPART,
        schema=schema,
        encoding={"scan": Encoding(content_type="image/*, application/pdf")},
    )
    body = encode_body(
        media,
        {
            "photo": "text",
            "scan": {"content": "%PDF", "content_type": "application/pdf", "filename": "s.pdf"},
            "any": {"content": "x", "content_type": "text/csv; charset=utf-8"},
        },
    )
    parts = parse(body)
    assert [part.get_content_type() for part in parts] == [
        "image/png",
        "application/pdf",
        "text/csv",
    ]
    assert [part.get_filename() for part in parts] == ["photo", "s.pdf", "any"]
    wildcard = MediaType(
        content_type=MULTIPART, schema=schema, encoding={"scan": Encoding(content_type="image/*")}
    )
    assert (
        parse(encode_body(wildcard, {"scan": "x"}))[0].get_content_type()
        == "application/octet-stream"
    )


def test_a_file_of_a_type_the_operation_does_not_accept_is_rejected() -> None:
    media = MediaType(
        content_type=MULTIPART,
        schema={"properties": {"photo": {"format": "binary"}}},
        encoding={"photo": Encoding(content_type="image/png, image/jpeg")},
    )
    with pytest.raises(SerializationError) as caught:
        encode_body(media, {"photo": {"content": "x", "content_type": "image/gif"}})
    assert caught.value.field == "photo"
    assert caught.value.reason == (
        "content_type 'image/gif' is not accepted here (image/png, image/jpeg)"
    )


def test_bytes_are_sent_as_they_are_and_base64_properties_get_base64_text() -> None:
    media = MediaType(
        content_type=MULTIPART,
        schema={
            "properties": {
                "b64": {"type": "string", "contentEncoding": "base64"},
                "b64url": {"type": "string", "contentEncoding": "base64url"},
            }
        },
    )
    body = encode_body(media, {"raw": b"\x00\xff", "b64": b"\xfb\xff", "b64url": b"\xfb\xff"})
    assert body.content == framed(
        boundary_of(body),
        ([field("raw", "raw"), OCTETS], b"\x00\xff"),
        ([field("b64"), OCTETS], b"+/8="),
        ([field("b64url"), OCTETS], b"-_8="),
    )


def test_unknown_multipart_properties_are_inferred_from_their_values() -> None:
    body = encode_body(
        MediaType(content_type=MULTIPART), {"n": 1.0, "flag": False, "obj": {"a": 1}, "arr": [[1]]}
    )
    assert body.content == framed(
        boundary_of(body),
        ([field("n")], b"1"),
        ([field("flag")], b"false"),
        ([field("obj"), JSON_PART], b'{"a":1}'),
        ([field("arr"), JSON_PART], b"[1]"),
    )


def test_multipart_schemas_are_resolved_through_refs_and_all_of() -> None:
    components: dict[str, Mapping[str, Any]] = {
        "#/components/schemas/Upload": {
            "allOf": [
                {"$ref": "#/components/schemas/Base"},
                {"properties": {"note": {"type": "string"}}},
            ]
        },
        "#/components/schemas/Base": {
            "properties": {"file": {"$ref": "#/components/schemas/Blob"}}
        },
        "#/components/schemas/Blob": {"type": "string", "format": "binary"},
        "#/components/schemas/Loop": {
            "allOf": [{"$ref": "#/components/schemas/Loop"}],
            "properties": {},
        },
    }

    def resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        return components[ref] if isinstance(ref, str) else schema

    media = MediaType(content_type=MULTIPART, schema={"$ref": "#/components/schemas/Upload"})
    parts = parse(encode_body(media, {"file": "data", "note": "n"}, resolve=resolve))
    assert [part.get_filename() for part in parts] == ["file", None]
    # Without resolve the reference is opaque: "file" is then inferred from its value.
    assert [part.get_filename() for part in parse(encode_body(media, {"file": "data"}))] == [None]
    # A cycle of allOf references ends.
    looping = MediaType(content_type=MULTIPART, schema={"$ref": "#/components/schemas/Loop"})
    assert len(parse(encode_body(looping, {"a": "x"}, resolve=resolve))) == 1


def test_multipart_properties_with_a_style_become_text_fields_without_percent_encoding() -> None:
    media = MediaType(
        content_type=MULTIPART,
        encoding={
            "file_link_data": Encoding(style="deepObject", explode=True),
            "tags": Encoding(style="form", explode=False),
        },
    )
    body = encode_body(
        media, {"file_link_data": {"create": True, "note": "a b&c"}, "tags": ["x y", "z"]}
    )
    assert body.content == framed(
        boundary_of(body),
        ([field("file_link_data[create]")], b"true"),
        ([field("file_link_data[note]")], b"a b&c"),
        ([field("tags")], b"x y,z"),
    )


def test_declared_part_headers_are_sent_when_their_schema_fixes_the_value() -> None:
    headers: dict[str, Any] = {
        "X-Const": {"schema": {"type": "string", "const": "c"}},
        "X-Default": {"schema": {"type": "integer", "default": 5}},
        "X-Enum": {"schema": {"enum": ["only"]}},
        "X-List": {"schema": {"default": ["a", "b"]}},
        "X-Object": {"explode": True, "schema": {"default": {"k": "v"}}},
        "X-Ref": {"$ref": "#/components/headers/Ref"},
        "X-Free": {"schema": {"type": "integer"}},
        "X-Choice": {"schema": {"enum": ["a", "b"]}},
        "X-Bare": {"description": "no schema"},
        "Content-Type": {"schema": {"const": "ignored/ignored"}},
        "X-Broken": "not a header object",
    }
    refs: dict[str, Mapping[str, Any]] = {
        "#/components/headers/Ref": {"schema": {"$ref": "#/components/schemas/V"}},
        "#/components/schemas/V": {"const": "r"},
    }

    def resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        return refs[ref] if isinstance(ref, str) else schema

    media = MediaType(content_type=MULTIPART, encoding={"a": Encoding(headers=headers)})
    body = encode_body(media, {"a": "x"}, resolve=resolve)
    assert body.content == framed(
        boundary_of(body),
        (
            [
                field("a"),
                "X-Const: c",
                "X-Default: 5",
                "X-Enum: only",
                "X-List: a,b",
                "X-Object: k=v",
                "X-Ref: r",
            ],
            b"x",
        ),
    )


def test_declared_part_headers_never_splice() -> None:
    bad_value = MediaType(
        content_type=MULTIPART,
        encoding={"a": Encoding(headers={"X-A": {"schema": {"const": "v\r\nX-Evil: 1"}}})},
    )
    with pytest.raises(SerializationError, match="contains a line break") as caught:
        encode_body(bad_value, {"a": "x"})
    assert caught.value.field == "a"
    bad_name = MediaType(
        content_type=MULTIPART,
        encoding={"a": Encoding(headers={"X A:": {"schema": {"const": "v"}}})},
    )
    with pytest.raises(SerializationError, match="is not a valid header name"):
        encode_body(bad_name, {"a": "x"})


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        ({"content": "x", "name": "a"}, "unexpected: name"),
        ({"filename": "a"}, "give exactly one of 'content' and 'content_base64'"),
        (
            {"content": "x", "content_base64": "eA=="},
            "give exactly one of 'content' and 'content_base64'",
        ),
        ({"content": 5}, "the content must be a string"),
        ({"content": "x", "filename": 5}, "'filename' and 'content_type' must be strings"),
        ({"content": "x", "content_type": "image"}, "content_type 'image' is not a media type"),
        (
            {"content": "x", "content_type": "a/b\r\nX: y"},
            "content_type 'a/b\\r\\nX: y' is not a media type",
        ),
        ({"content_base64": "not base64!"}, "content_base64 is not valid base64"),
        ({"content_base64": "Y"}, "content_base64 is not valid base64"),
        ({"content_base64": "é"}, "content_base64 is not valid base64"),
    ],
)
def test_malformed_files_are_rejected_with_the_expected_shape(file: object, reason: str) -> None:
    media = MediaType(content_type=MULTIPART, schema={"properties": {"f": {"format": "binary"}}})
    with pytest.raises(SerializationError) as caught:
        encode_body(media, {"f": file})
    assert caught.value.field == "f"
    assert reason in caught.value.reason


def test_an_array_of_files_holds_files_not_arrays() -> None:
    schema = {"properties": {"f": {"type": "array", "items": {"format": "binary"}}}}
    with pytest.raises(SerializationError) as caught:
        encode_body(MediaType(content_type=MULTIPART, schema=schema), {"f": [[1]]})
    assert caught.value.reason == "a value of type list cannot be sent here"


def test_base64_file_content_is_decoded_leniently() -> None:
    media = MediaType(content_type=MULTIPART, schema={"properties": {"f": {"format": "binary"}}})
    for text in ("+/8=", "+/8", "-_8", "+/\n8="):
        parts = parse(encode_body(media, {"f": {"content_base64": text}}))
        assert parts[0].get_payload(decode=True) == b"\xfb\xff"


def test_a_multipart_body_must_be_an_object() -> None:
    with pytest.raises(SerializationError) as caught:
        encode_body(MediaType(content_type=MULTIPART), "x")
    assert (caught.value.field, caught.value.reason) == (
        "",
        "must be an object to be sent as multipart/form-data",
    )


def test_a_multipart_text_field_that_its_charset_cannot_hold_is_rejected() -> None:
    media = MediaType(
        content_type=MULTIPART, encoding={"a": Encoding(content_type="text/plain; charset=ascii")}
    )
    with pytest.raises(SerializationError) as caught:
        encode_body(media, {"a": "é"})
    assert (caught.value.field, caught.value.reason) == ("a", "'é' cannot be encoded in ascii")


# -- other bodies --------------------------------------------------------------------------


def test_binary_bodies_take_text_bytes_or_a_file() -> None:
    media = MediaType(content_type="application/octet-stream")
    assert encode_body(media, "é") == EncodedBody(
        content="é".encode(), content_type="application/octet-stream"
    )
    assert encode_body(media, b"\x00") == EncodedBody(
        content=b"\x00", content_type="application/octet-stream"
    )
    assert encode_body(media, {"content_base64": "AA=="}) == EncodedBody(
        content=b"\x00", content_type="application/octet-stream"
    )
    png = MediaType(content_type="image/png")
    assert (
        encode_body(png, {"content": "x", "content_type": "image/png"}).content_type == "image/png"
    )
    with pytest.raises(SerializationError, match="'image/jpeg' is not accepted here"):
        encode_body(png, {"content": "x", "content_type": "image/jpeg"})


def test_wildcard_body_types_become_concrete() -> None:
    anything = MediaType(content_type="*/*")
    assert encode_body(anything, "x").content_type == "application/octet-stream"
    assert (
        encode_body(anything, {"content": "x", "content_type": "image/gif"}).content_type
        == "image/gif"
    )
    assert (
        encode_body(MediaType(content_type="image/*"), b"x").content_type
        == "application/octet-stream"
    )
    assert (
        encode_body(MediaType(content_type="text/*"), "x").content_type
        == "text/plain; charset=utf-8"
    )


def test_text_bodies_are_encoded_in_their_charset() -> None:
    assert encode_body(MediaType(content_type="text/plain"), "é") == EncodedBody(
        content="é".encode(), content_type="text/plain; charset=utf-8"
    )
    assert encode_body(MediaType(content_type="text/csv; charset=iso-8859-1"), "é") == EncodedBody(
        content=b"\xe9", content_type="text/csv; charset=iso-8859-1"
    )
    assert encode_body(MediaType(content_type="text/plain; format=flowed"), 3.0) == EncodedBody(
        content=b"3", content_type="text/plain; format=flowed; charset=utf-8"
    )
    assert encode_body(MediaType(content_type="application/xml"), "<a/>") == EncodedBody(
        content=b"<a/>", content_type="application/xml"
    )


@pytest.mark.parametrize(
    ("content_type", "value", "reason"),
    [
        ("text/plain", ["a"], "must be a string to be sent as text/plain, not an array"),
        ("text/plain; charset=ascii", "é", "'é' cannot be encoded in ascii"),
        ('text/plain; charset="klingon"', "x", "the declared charset 'klingon' is unknown"),
        ("application/octet-stream", {"a": 1}, "unexpected: a"),
    ],
)
def test_other_bodies_that_cannot_be_sent_are_rejected(
    content_type: str, value: object, reason: str
) -> None:
    with pytest.raises(SerializationError) as caught:
        encode_body(MediaType(content_type=content_type), value)
    assert caught.value.field == ""
    assert reason in caught.value.reason
