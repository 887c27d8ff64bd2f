"""The user's browser at a login's authorization address, as the tests of logins that
last play it (`toolsets.mcp.oauth_login`, ``toolsets login``): the OpenID provider's
login and consent pages answered, then its redirect followed to the loopback address the
login serves."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import httpx2

from toolsets.mcp.client._login import CALLBACK_PATH

BROWSER_TIMEOUT = 10.0
_PROMPT = re.compile(r'name="prompt" value="(login|consent)"')


async def log_in_as(address: str, user: str = "alice") -> list[str]:
    """Log ``user`` in at ``address``; the pages answered (``login``, ``consent``)."""
    pages: list[str] = []
    async with httpx2.AsyncClient(timeout=BROWSER_TIMEOUT) as browser:
        response = await browser.get(address)
        for _ in range(10):
            location = response.headers.get("location")
            if response.is_redirect and location is not None:
                target = str(response.url.join(location))
                response = await browser.get(target)
                if urlsplit(target).path == CALLBACK_PATH:
                    assert response.status_code == 200, response.text
                    assert "You are logged in" in response.text
                    return pages
                continue
            prompt = _PROMPT.search(response.text)
            assert prompt is not None, f"not a login or consent page: {response.text[:300]}"
            pages.append(prompt.group(1))
            form = {"prompt": prompt.group(1), "login": user, "password": "any"}
            response = await browser.post(str(response.url), data=form)
    raise AssertionError("the provider's pages did not lead to the login's redirect")
