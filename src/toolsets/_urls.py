"""URLs as messages may show them: no user info, query or fragment, each of which may
carry a secret. Below every other module (errors use it for the documents they name)."""

from __future__ import annotations

from ipaddress import ip_address
from urllib.parse import urlsplit

__all__ = ["is_loopback", "safe_url"]


def safe_url(url: object) -> str:
    """``url`` as a message may show it: ``scheme://host[:port]/path``, without user
    info, query or fragment (each may carry a secret)."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:  # not a URL (an unbalanced "[", say): cut by hand
        text = text.split("#", 1)[0].split("?", 1)[0]
        scheme, slashes, rest = text.partition("://")
        if not slashes:
            return text.rsplit("@", 1)[-1]
        netloc, slash, path = rest.partition("/")
        return f"{scheme}://{netloc.rsplit('@', 1)[-1]}{slash}{path}"
    host = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else parts.path


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host name) is this machine only: ``localhost`` or a
    loopback address."""
    if host.lower() == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False
