from __future__ import annotations

from toolsets import error_result, invalid_arguments_result, is_error_result
from toolsets._results import MAX_FIELDS, MAX_PROBLEM


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
        "Invalid arguments: date, (arguments) (see fields). Fix them and call the tool again."
    )


def test_an_invalid_arguments_result_says_each_problem_once_and_bounded() -> None:
    huge = "x" * 100_000
    result = invalid_arguments_result(
        [(huge, f"{huge!r} is too long")] + [(f"f{i}", "wrong") for i in range(100)]
    )
    fields = result["fields"]
    assert isinstance(fields, dict)
    assert len(fields) == MAX_FIELDS
    assert all(len(k) <= MAX_PROBLEM and len(str(v)) <= MAX_PROBLEM for k, v in fields.items())
    assert "81 more" in str(result["error"])
    assert "is too long" not in str(result["error"])
