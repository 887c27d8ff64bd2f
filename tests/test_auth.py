from __future__ import annotations

import pytest

from toolsets import AuthConfig, AuthCredential
from toolsets._auth import MASK, Secret, redact, redact_json
from toolsets._json import MAX_JSON_DEPTH


def test_secrets_never_appear_in_a_repr() -> None:
    credentials = [
        AuthCredential.api_key("key-SECRET-1"),
        AuthCredential.basic("ann", "pw-SECRET-2"),
        AuthCredential.bearer("tok-SECRET-3"),
        AuthCredential.oauth2("acc-SECRET-4", refresh_token="ref-SECRET-5", scopes=("read",)),
    ]
    for credential in credentials:
        shown = repr(credential) + str(credential) + repr(vars(credential))
        assert "SECRET" not in shown, shown
        assert credential.kind in shown


def test_the_factories_fill_the_right_fields() -> None:
    basic = AuthCredential.basic("ann", "pw")
    assert (basic.kind, basic.username, basic.secret) == ("basic", "ann", "pw")
    oauth = AuthCredential.oauth2("acc", refresh_token="ref", expires_at=10.0, scopes=("a",))
    assert (oauth.kind, oauth.secret, oauth.refresh_token, oauth.expires_at, oauth.scopes) == (
        "oauth2",
        "acc",
        "ref",
        10.0,
        ("a",),
    )
    assert AuthCredential.api_key("k").kind == "api_key"
    assert AuthCredential.bearer("t").kind == "bearer"


def test_an_empty_secret_or_a_basic_credential_without_user_is_rejected() -> None:
    with pytest.raises(ValueError, match="non-empty secret"):
        AuthCredential.bearer("")
    with pytest.raises(ValueError, match="username"):
        AuthCredential(kind="basic", secret="pw")


def test_auth_config_key_is_stable_across_scope_order() -> None:
    one = AuthConfig(scheme_name="oauth", scheme={"type": "oauth2"}, scopes=("b", "a"))
    two = AuthConfig(scheme_name="oauth", scheme={"type": "oauth2"}, scopes=("a", "b"))
    assert one.key == two.key == "oauth|a b"
    assert AuthConfig(scheme_name="key").key == "key"


def test_secrets_never_reach_a_tool_result() -> None:
    from toolsets._json import to_json_value

    credential = AuthCredential.oauth2("acc-SECRET", refresh_token="ref-SECRET", scopes=("a",))
    result = to_json_value({"oops": credential})
    assert "SECRET" not in str(result)
    assert result == {
        "oops": {
            "kind": "oauth2",
            "secret": "**********",
            "username": None,
            "refresh_token": "**********",
            "expires_at": None,
            "scopes": ["a"],
        }
    }


def test_a_secret_is_the_string_itself_everywhere_but_in_its_repr() -> None:
    credential = AuthCredential.bearer("tok-SECRET")
    assert credential.secret == "tok-SECRET"
    assert f"Bearer {credential.secret}" == "Bearer tok-SECRET"
    assert isinstance(credential.secret, Secret)
    assert "SECRET" not in repr(credential.secret)
    assert credential == AuthCredential.bearer("tok-SECRET")


def test_redact_masks_a_secret_as_is_and_percent_encoded() -> None:
    text = "got 'a/b c' and a%2Fb%20c and nothing else"
    assert redact(text, ["a/b c", None, ""]) == "got '**********' and ********** and nothing else"


def test_redact_json_masks_every_string_keys_included_at_any_depth() -> None:
    value = {"tok-SECRET": ["a tok-SECRET", {"n": 1, "ok": True, "none": None}], "x": "y"}
    assert redact_json(value, ["tok-SECRET"]) == {
        MASK: [f"a {MASK}", {"n": 1, "ok": True, "none": None}],
        "x": "y",
    }
    deep: list[object] = ["tok-SECRET"]
    for _ in range(MAX_JSON_DEPTH * 100):  # far deeper than Python's recursion limit
        deep = [deep]
    masked = redact_json(deep, ["tok-SECRET"])
    for _ in range(MAX_JSON_DEPTH * 100):
        assert isinstance(masked, list)
        masked = masked[0]
    assert masked == [MASK]


def test_redact_json_without_secrets_returns_the_value_itself() -> None:
    value = {"a": ["b"]}
    assert redact_json(value, []) is value
