"""`Refusals` (what `TokenExchange` remembers of an issuer's refusals) on a clock of the
test's own: a refusal holds for its period and one subject token, no longer than that
token's expiry; the least recently used go first past the bound; only the issuer's
decisions count as refusals."""

from __future__ import annotations

import time

import pytest

from toolsets import AuthError
from toolsets.mcp.server._refusals import Refusals, is_refusal, token_digest


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_refusal_holds_for_its_period_and_its_subject_token_only() -> None:
    clock = Clock()
    refusals: Refusals[str] = Refusals(30, clock=clock)
    mine, other = token_digest("alice-at"), token_digest("alice-at-2")
    assert mine != other
    assert "alice" not in mine
    assert refusals.remember("alice", mine, "refused", None) == 30
    assert refusals.get("alice", mine) == "refused"
    assert refusals.get("alice", other) is None
    clock.now += 29.9
    assert refusals.get("alice", mine) == "refused"
    clock.now += 0.1
    assert refusals.get("alice", mine) is None
    assert len(refusals) == 0
    refusals.remember("alice", mine, "refused", None)
    refusals.forget("alice")
    assert refusals.get("alice", mine) is None


def test_a_refusal_never_outlasts_the_subject_token_and_a_period_of_0_keeps_none() -> None:
    clock = Clock()
    refusals: Refusals[str] = Refusals(30, clock=clock)
    held = refusals.remember("a", "d", "refused", time.time() + 5)
    assert 4 < held <= 5
    assert refusals.remember("b", "d", "refused", time.time() - 1) == 0
    assert refusals.get("b", "d") is None
    assert Refusals[str](0).remember("a", "d", "refused", None) == 0
    with pytest.raises(ValueError, match="refusal_period"):
        Refusals(-1)


def test_past_the_bound_the_least_recently_used_refusal_goes() -> None:
    refusals: Refusals[int] = Refusals(30, limit=3, clock=Clock())
    for key in range(3):
        refusals.remember(key, "d", f"no {key}", None)
    assert refusals.get(0, "d") == "no 0"  # used: 1 is now the least recently used
    refusals.remember(3, "d", "no 3", None)
    assert len(refusals) == 3
    assert refusals.get(1, "d") is None
    assert [refusals.get(key, "d") for key in (0, 2, 3)] == ["no 0", "no 2", "no 3"]


def test_only_the_issuers_decisions_are_refusals() -> None:
    def answer(status: int | None, code: str | None) -> AuthError:
        return AuthError("x", scheme_name="s", status_code=status, oauth_error=code)

    assert is_refusal(answer(400, "invalid_grant"))
    assert is_refusal(answer(400, "invalid_target"))
    assert is_refusal(answer(401, "unauthorized_client"))
    assert not is_refusal(answer(503, "temporarily_unavailable"))
    assert not is_refusal(answer(500, "invalid_grant"))
    assert not is_refusal(answer(429, None))
    assert not is_refusal(answer(400, "invalid_client"))  # this server's own credentials
    assert not is_refusal(answer(None, None))  # no answer at all
