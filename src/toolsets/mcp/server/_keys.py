"""The keys that seal a waiting request's state (protocol 2026-07-28: a confirmation
asked by one replica is answered to another), as a deployment gives them: environment
variables or a file, each a ring of keys where the first seals and all unseal, so that
a key is rotated without downtime.

- ``TOOLSETS_MCP_STATE_KEY``: the key (or keys, comma-separated) this server seals with
  (the first) and accepts;
- ``TOOLSETS_MCP_STATE_KEY_PREVIOUS``: keys accepted only (comma-separated), the one
  rotated out, for as long as states it sealed may come back (`STATE_TTL`);
- ``TOOLSETS_MCP_STATE_KEY_FILE``: a file holding the keys, one a line (the first
  seals), instead of the first variable (a secret mounted as a file).

A key is at least `MIN_KEY_LENGTH` characters of printable ASCII (no spaces nor
commas), e.g. ``python -c "import secrets; print(secrets.token_hex(32))"``. A malformed
key is refused when the server is made, naming the variable and the key's place in it
(never the key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "MIN_KEY_LENGTH",
    "PREVIOUS_STATE_KEYS_VARIABLE",
    "STATE_KEY_FILE_VARIABLE",
    "STATE_KEY_VARIABLE",
    "STATE_TTL",
    "check_state_keys",
    "state_keys_from",
]

STATE_KEY_VARIABLE = "TOOLSETS_MCP_STATE_KEY"
"""The environment variable holding the key (or comma-separated keys, the first sealing)
that the processes sharing their clients seal a waiting call's state with."""
PREVIOUS_STATE_KEYS_VARIABLE = "TOOLSETS_MCP_STATE_KEY_PREVIOUS"
"""The environment variable holding keys accepted but no longer sealing with
(comma-separated): a rotation's old key."""
STATE_KEY_FILE_VARIABLE = "TOOLSETS_MCP_STATE_KEY_FILE"
"""The environment variable naming a file of keys, one a line, the first sealing."""
MIN_KEY_LENGTH = 32
"""The fewest characters a key has (the SDK derives an AES-256 key from it)."""
STATE_TTL = 600.0
"""Seconds a sealed request state is accepted after it was sealed (the SDK's)."""


def check_state_keys(keys: Sequence[bytes | str], where: str = "keys") -> list[bytes]:
    """``keys`` as key material, each checked: text (printable ASCII, no spaces nor
    commas: as an environment variable gives it) or raw bytes, at least
    `MIN_KEY_LENGTH` long, none twice.

    Raises:
        ValueError: no key, or a malformed one; the message names ``where`` and the
            key's place, never the key.
    """
    if isinstance(keys, str | bytes) or not keys:
        raise ValueError(f"{where}: give a list of one key or more")
    checked: list[bytes] = []
    for index, key in enumerate(keys):
        place = f"{where}: key #{index + 1}"
        if isinstance(key, bytes):  # raw secret bytes (from Python): any will do
            material = key
        elif isinstance(key, str):
            material = key.encode("utf-8", "replace")
        else:
            raise ValueError(f"{place} is a {type(key).__name__}, not text nor bytes")
        bad = _bad_character(key) if isinstance(key, str) else None
        if bad is not None:
            raise ValueError(
                f"{place} holds a character that is not printable ASCII or is a space or "
                f'comma (U+{ord(bad):04X}); make one with: python -c "import secrets; '
                'print(secrets.token_hex(32))"'
            )
        if len(material) < MIN_KEY_LENGTH:
            raise ValueError(
                f"{place} is {len(material)} characters; a key is at least {MIN_KEY_LENGTH} "
                '(make one with: python -c "import secrets; print(secrets.token_hex(32))")'
            )
        if material in checked:
            raise ValueError(f"{place} is given twice")
        checked.append(material)
    return checked


def _bad_character(key: str) -> str | None:
    """The first character a key given as text may not hold."""
    return next((c for c in key if not (c.isascii() and c.isprintable()) or c in " ,"), None)


def state_keys_from(environ: Mapping[str, str]) -> list[bytes] | None:
    """The keys the environment gives (see the module's docstring), the sealing one
    first; None when it gives none.

    Raises:
        ValueError: a malformed key, an unreadable key file, both the key and a key
            file given, or keys to accept with none to seal with.
    """
    given = environ.get(STATE_KEY_VARIABLE, "").strip()
    file = environ.get(STATE_KEY_FILE_VARIABLE, "").strip()
    previous = _split(environ.get(PREVIOUS_STATE_KEYS_VARIABLE, ""), ",")
    if given and file:
        raise ValueError(f"give {STATE_KEY_VARIABLE} or {STATE_KEY_FILE_VARIABLE}, not both")
    if file:
        try:
            text = Path(file).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"{STATE_KEY_FILE_VARIABLE}: cannot read the key file ({exc})"
            ) from exc
        current = check_state_keys(_split(text, "\n"), STATE_KEY_FILE_VARIABLE)
    elif given:
        current = check_state_keys(_split(given, ","), STATE_KEY_VARIABLE)
    elif previous:
        raise ValueError(
            f"{PREVIOUS_STATE_KEYS_VARIABLE} is set but {STATE_KEY_VARIABLE} is not: "
            "give the key to seal with too"
        )
    else:
        return None
    if not previous:
        return current
    older = check_state_keys(previous, PREVIOUS_STATE_KEYS_VARIABLE)
    return current + [key for key in older if key not in current]


def _split(text: str, separator: str) -> list[str]:
    return [part.strip() for part in text.split(separator) if part.strip()]
