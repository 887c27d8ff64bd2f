from __future__ import annotations

import pytest

from toolsets import Blob, Content, FileData, FunctionCall, FunctionResponse, Part
from toolsets._json import to_json_value


def test_a_part_holds_exactly_one_payload() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Part()
    with pytest.raises(ValueError, match="exactly one"):
        Part(text="a", function_call=FunctionCall(name="f"))
    assert Part(file_data=FileData(uri="file:///a.txt")).file_data is not None
    assert Part(function_response=FunctionResponse(name="f", response=1)).function_response


def test_content_text_joins_text_parts_but_not_thoughts() -> None:
    content = Content(
        role="model",
        parts=(
            Part(text="thinking...", thought=True),
            Part.from_text("Hello, "),
            Part(function_call=FunctionCall(name="f", args={"x": 1}, id="c1")),
            Part.from_text("world"),
        ),
    )
    assert content.text == "Hello, world"
    assert content.function_calls == (FunctionCall(name="f", args={"x": 1}, id="c1"),)
    assert Content.user("hi") == Content(role="user", parts=(Part(text="hi"),))


def test_blobs_are_base64_in_json_and_hidden_in_repr() -> None:
    blob = Blob(mime_type="image/png", data=b"\x89PNG")
    assert blob.to_json() == {"mime_type": "image/png", "data": "iVBORw=="}
    assert "PNG" not in repr(blob).replace("image/png", "")
    assert Part.from_bytes(b"\x89PNG", "image/png").inline_data == blob


def test_to_json_value_rejects_what_json_cannot_carry() -> None:
    with pytest.raises(TypeError):
        to_json_value(object())


def test_nan_and_infinity_become_null_because_json_cannot_carry_them() -> None:
    assert to_json_value({"a": float("nan"), "b": [float("inf")], "c": 1.5}) == {
        "a": None,
        "b": [None],
        "c": 1.5,
    }
