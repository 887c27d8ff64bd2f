from __future__ import annotations

from toolsets import error_result, invalid_arguments_result, is_error_result


def test_error_results_have_one_shape() -> None:
    assert error_result("not found", status=404) == {"error": "not found", "status": 404}
    assert is_error_result({"error": "x"})
    assert not is_error_result({"ok": True})
    assert not is_error_result("error")


def test_invalid_arguments_name_every_field_and_merge_repeats() -> None:
    result = invalid_arguments_result(
        [("date", "bad date"), ("", "not an object"), ("date", "in the past")]
    )
    assert result["fields"] == {"date": "bad date; in the past", "(arguments)": "not an object"}
    assert result["error"] == (
        "Invalid arguments: date: bad date; in the past; "
        "(arguments): not an object. Fix these fields and call the tool again."
    )
