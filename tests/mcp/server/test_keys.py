"""The request-state keys a deployment gives (``TOOLSETS_MCP_STATE_KEY``, ``..._PREVIOUS``,
``..._FILE``): a ring whose first key seals, read from the environment or a file, a
malformed key refused naming its place and never showing it. (Replicas sharing and
rotating them: tests/cli/test_serve_deploy.py.)"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import pytest

from toolsets.mcp import McpServer
from toolsets.mcp.server._keys import (
    PREVIOUS_STATE_KEYS_VARIABLE,
    STATE_KEY_FILE_VARIABLE,
    STATE_KEY_VARIABLE,
    check_state_keys,
    state_keys_from,
)

NEW = secrets.token_hex(32)
OLD = secrets.token_hex(32)


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def test_no_key_in_the_environment_is_none() -> None:
    assert state_keys_from({}) is None


def test_the_key_seals_and_previous_keys_are_accepted_after_it() -> None:
    keys = state_keys_from({STATE_KEY_VARIABLE: NEW, PREVIOUS_STATE_KEYS_VARIABLE: f" {OLD} ,"})
    assert keys == [NEW.encode(), OLD.encode()]
    assert state_keys_from({STATE_KEY_VARIABLE: f"{NEW},{OLD}"}) == [NEW.encode(), OLD.encode()]


def test_a_key_file_holds_one_key_a_line(tmp_path: Path) -> None:
    file = tmp_path / "keys"
    file.write_text(f"{NEW}\n\n{OLD}\n")
    assert state_keys_from({STATE_KEY_FILE_VARIABLE: str(file)}) == [NEW.encode(), OLD.encode()]


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({STATE_KEY_VARIABLE: "short"}, f"{STATE_KEY_VARIABLE}: key #1 is 5 characters"),
        ({STATE_KEY_VARIABLE: f"{NEW},{'x' * 31}"}, "key #2 is 31 characters"),
        ({STATE_KEY_VARIABLE: "é" * 40}, "not printable ASCII"),
        ({STATE_KEY_VARIABLE: f"{NEW[:20]} {NEW[20:]}"}, "space or comma"),
        ({STATE_KEY_VARIABLE: f"{NEW},{NEW}"}, "key #2 is given twice"),
        ({PREVIOUS_STATE_KEYS_VARIABLE: OLD}, f"{STATE_KEY_VARIABLE} is not"),
        ({PREVIOUS_STATE_KEYS_VARIABLE: "old", STATE_KEY_VARIABLE: NEW}, "key #1 is 3 char"),
        ({STATE_KEY_VARIABLE: NEW, STATE_KEY_FILE_VARIABLE: "/k"}, "not both"),
        ({STATE_KEY_FILE_VARIABLE: "/nowhere/keys"}, "cannot read the key file"),
    ],
)
def test_a_malformed_key_is_refused_naming_its_place_never_the_key(
    environ: dict[str, str], said: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(said)) as refused:
        state_keys_from(environ)
    for value in environ.values():
        if len(value) >= 32:
            assert value not in str(refused.value)


def test_a_server_made_with_a_malformed_key_in_the_environment_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(STATE_KEY_VARIABLE, "too-short")
    with pytest.raises(ValueError, match=f"{STATE_KEY_VARIABLE}: key #1 is 9 characters"):
        McpServer([add])


def test_keys_given_from_python_are_checked_and_raw_bytes_will_do() -> None:
    server = McpServer([add])
    server.use_request_state_keys([secrets.token_bytes(32), NEW])
    with pytest.raises(ValueError, match="key #2 is 8 characters"):
        server.use_request_state_keys([NEW, "12345678"])
    with pytest.raises(ValueError, match="a list of one key or more"):
        server.use_request_state_keys(NEW)  # type: ignore[arg-type]  # one string, not a list
    assert check_state_keys([b"\x00" * 32]) == [b"\x00" * 32]
