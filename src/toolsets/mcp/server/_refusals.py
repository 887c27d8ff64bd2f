"""Token exchanges the issuer refused, remembered for a short while (`Refusals`), so that
a user the issuer will not give a token for the upstream's audience (a gateway asks for
one per listing and per call) costs one request to the issuer and one WARNING per
period, not one per request. Only an answer that is the issuer's decision counts
(`is_refusal`: HTTP 400/401/403 with ``invalid_grant``, ``invalid_target``...); an issuer
down, a 5xx, a timeout is tried again by the next request."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from toolsets._errors import AuthError

__all__ = ["MAX_REMEMBERED_REFUSALS", "REFUSAL_PERIOD", "Refusals", "is_refusal", "token_digest"]

REFUSAL_PERIOD = 30.0
"""Seconds a token exchange the issuer refused is answered with that refusal without
asking it again (never past the caller's own token's expiry)."""
MAX_REMEMBERED_REFUSALS = 10_000
"""Refusals remembered at most (the least recently used are dropped)."""
REFUSING_ERRORS = frozenset(
    {"invalid_grant", "invalid_target", "unauthorized_client", "invalid_scope", "access_denied"}
)
"""The OAuth error codes (RFC 6749 §5.2, RFC 8693 §2.2.2) by which an issuer decides that
this subject does not get this token: asking again at once would get the same answer."""

K = TypeVar("K", bound=Hashable)


def is_refusal(error: AuthError) -> bool:
    """Whether the token endpoint decided (not: failed) that no token is issued."""
    return error.status_code in (400, 401, 403) and error.oauth_error in REFUSING_ERRORS


def token_digest(token: str) -> str:
    """What a refusal is remembered for: a digest of the subject token (never the token:
    a new token of the same user, with other grants, is asked about anew)."""
    return hashlib.sha256(token.encode()).hexdigest()


class Refusals(Generic[K]):
    """Refusals by key (one each, for one subject token's digest), each until its period
    ends; at most ``limit``, the least recently used dropped first.

    Args:
        period: Seconds a refusal is remembered (0: none is).
        limit: Refusals remembered at most.
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        period: float = REFUSAL_PERIOD,
        *,
        limit: int = MAX_REMEMBERED_REFUSALS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if period < 0:
            raise ValueError(f"refusal_period must not be negative, not {period!r}")
        self.period = period
        self._limit = limit
        self._clock = clock
        self._kept: OrderedDict[K, tuple[str, str, float]] = OrderedDict()
        """By key: the subject token's digest, the refusal's message, and when it is
        forgotten (``clock`` seconds)."""

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: K, digest: str) -> str | None:
        """The message of the refusal remembered for ``key`` and this subject token."""
        kept = self._kept.get(key)
        if kept is None:
            return None
        if kept[2] <= self._clock():
            del self._kept[key]
            return None
        self._kept.move_to_end(key)
        return kept[1] if kept[0] == digest else None

    def remember(self, key: K, digest: str, message: str, expires_at: float | None) -> float:
        """Remember a refusal for the period, or until ``expires_at`` (wall-clock seconds,
        the subject token's expiry) if sooner: the seconds it is remembered (0: not)."""
        period = self.period
        if expires_at is not None:
            period = min(period, expires_at - time.time())
        if period <= 0:
            return 0.0
        self._kept[key] = (digest, message, self._clock() + period)
        self._kept.move_to_end(key)
        while len(self._kept) > self._limit:
            self._kept.popitem(last=False)
        return period

    def forget(self, key: K) -> None:
        """Drop the refusal remembered for ``key`` (whichever subject token it was for)."""
        self._kept.pop(key, None)
