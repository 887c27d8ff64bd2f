"""OAuth logins to MCP servers that last: the `mcp` SDK's OAuth client
(``mcp.client.auth.OAuthClientProvider``) with a durable token store, a browser (or a
printed address) for the user's login, and a loopback address receiving the
authorization server's redirect (`toolsets.mcp.client._login_redirect`).

`oauth_login` is for people: against a server that answers 401 it runs the authorization
code flow with PKCE (the SDK discovers the authorization server, registers the client
dynamically or names it by its client metadata document, and exchanges the code), keeps
the tokens (`toolsets.mcp.client._login_store`), and later runs refresh them without a
browser. `oauth_client_credentials` is for machines (the SDK's client credentials
provider). `forget_login` drops what a store keeps for a server.

Nothing here implements OAuth: the SDK does all of it; this module gives it somewhere to
keep tokens, a way to reach the user, and the restored expiry of a kept token.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, ValidationError

from toolsets.mcp.client._login_redirect import (
    CALLBACK_PATH,
    LOGIN_TIMEOUT,
    LoginPrompt,
    LoopbackRedirect,
    browser_present,
    free_port,
    log_prompt,
    registered_port,
)
from toolsets.mcp.client._login_store import (
    REFRESH_AHEAD,
    LoginStore,
    LoginStoreKind,
    chosen_store,
)
from toolsets.mcp.client._stored_login import StoredLogin

__all__ = [
    "CALLBACK_PATH",
    "LOGIN_TIMEOUT",
    "LoginPrompt",
    "browser_present",
    "forget_login",
    "oauth_client_credentials",
    "oauth_login",
]

logger = logging.getLogger("toolsets.mcp.login")

_CLIENT_NAME = "toolsets"
"""The name the client registers under at an authorization server."""


class _LastingLogin(OAuthClientProvider):
    """The SDK's OAuth client, which on starting reads the stored tokens but not when
    they expire: here it learns that too (`StoredLogin` gives the time left), so that a
    later process refreshes an expired token instead of sending it (and being sent to
    the browser by the 401). It also redirects to the port its kept registration names
    (another for a new registration)."""

    def __init__(self, redirect: LoopbackRedirect, storage: StoredLogin, **options: Any) -> None:
        super().__init__(storage=storage, **options)
        self._redirect = redirect
        self._stored = storage
        self._said = False
        self._release: Callable[[], None] = _nothing
        self._refresh: httpx2.Request | None = None
        self._adopted: OAuthToken | None = None
        storage.discovered = self._discovered

    def _discovered(self) -> dict[str, Any]:
        context = self.context
        found: dict[str, Any] = {"authorization_server_url": context.auth_server_url}
        for name, metadata in (
            ("authorization_server", context.oauth_metadata),
            ("protected_resource", context.protected_resource_metadata),
        ):
            if metadata is not None:
                found[name] = metadata.model_dump(mode="json", exclude_none=True)
        return found

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if not self._redirect.interactive and not await self._stored.kept():
            # Nobody to log in and no login kept: the request goes as it is (a server
            # that wants a login refuses it, and says so), registering no client.
            response = yield request
            if response.status_code == 401 and not self._said:
                self._said = True  # once: a client may try again (another protocol era)
                logger.warning(
                    "%s asks for a login, and none is kept: log in once where a browser "
                    "or a terminal is at hand",
                    self.context.server_url,
                )
            return
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is self._refresh and self._adopted is not None:
                    response = _answered(outgoing, self._adopted)
                else:
                    response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            self._release()
            await flow.aclose()

    async def _refresh_token(self) -> httpx2.Request:
        # Processes refreshing this login take turns; the one whose turn it is reads
        # the login again first: another may have refreshed it meanwhile.
        self._release = await self._stored.refreshing()
        tokens = await self._stored.kept_elsewhere()
        self._adopted = None
        if tokens is not None:  # its refresh token, never the spent one
            self.context.current_tokens = tokens
            self.context.update_token_expiry(tokens)
            if self.context.is_token_valid():
                self._adopted = tokens  # the refresh is answered with them, not sent
        self._refresh = await super()._refresh_token()
        return self._refresh

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        try:
            return await self._refreshed(response)
        finally:
            self._release()
            self._release, self._refresh, self._adopted = _nothing, None, None

    async def _refreshed(self, response: httpx2.Response) -> bool:
        if await super()._handle_refresh_response(response):
            return True
        # Refused: if another process (a worker of the same server, a command run
        # meanwhile) refreshed the login first, its tokens are the login's now.
        tokens = await self._stored.kept_elsewhere()
        if tokens is None:
            return False
        self.context.current_tokens = tokens
        self.context.update_token_expiry(tokens)
        return self.context.is_token_valid()

    async def _initialize(self) -> None:
        await super()._initialize()
        context = self.context
        tokens = context.current_tokens
        if tokens is not None and tokens.expires_in is not None:
            context.update_token_expiry(tokens)
        if tokens is not None and context.oauth_metadata is None:
            # The SDK refreshes at the token endpoint it discovered, and discovers only
            # on a 401: a new process refreshes where the login's tokens came from.
            kept = await self._stored.get_discovered()
            try:
                if "authorization_server" in kept:
                    context.oauth_metadata = OAuthMetadata.model_validate(
                        kept["authorization_server"]
                    )
                if "protected_resource" in kept:
                    context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                        kept["protected_resource"]
                    )
            except ValidationError:
                context.oauth_metadata = context.protected_resource_metadata = None
            if isinstance(kept.get("authorization_server_url"), str):
                context.auth_server_url = kept["authorization_server_url"]
        client = self.context.client_info
        port = registered_port(client.redirect_uris if client is not None else None)
        self._redirect.port = port or self._redirect.port or free_port()
        self.context.client_metadata.redirect_uris = [AnyUrl(self._redirect.uri)]


def _nothing() -> None:
    """No lock held."""


def _answered(refresh: httpx2.Request, tokens: OAuthToken) -> httpx2.Response:
    """The answer to ``refresh`` that another process's refresh gave already: its
    tokens, as the token endpoint gave them (their whole lifetime again)."""
    body = tokens.model_dump(mode="json", exclude_none=True)
    if tokens.expires_in is not None:
        body["expires_in"] = tokens.expires_in + int(REFRESH_AHEAD)
    return httpx2.Response(200, json=body, request=refresh)


def oauth_login(
    url: str,
    *,
    store: LoginStore | LoginStoreKind = "auto",
    browser: bool = True,
    prompt: LoginPrompt | None = None,
    client_name: str = _CLIENT_NAME,
    client_metadata_url: str | None = None,
    timeout: float = LOGIN_TIMEOUT,
    interactive: bool = True,
) -> httpx2.Auth:
    """An ``httpx2.Auth`` logging the user in to the MCP server at ``url`` when it asks
    (authorization code with PKCE, by the `mcp` SDK), keeping the login in ``store`` so
    that later runs use it, refreshed without a browser while the refresh token lasts.
    Give it to `StreamableHttp` (or `Sse`) as ``auth``.

    Args:
        url: The MCP server's URL (the resource the tokens are for).
        store: Where logins are kept: a `LoginStore`, or ``"auto"`` (the OS keyring
            where the ``keyring`` extra finds one, else a file readable by the user
            alone under their config directory), ``"keyring"`` or ``"file"``.
        browser: Open the authorization address in a browser (when there is one);
            it is shown through ``prompt`` either way.
        prompt: Shows the user the address (default: a warning logged on
            ``toolsets.mcp.login``).
        client_name: The name the client registers under.
        client_metadata_url: An https URL of this client's metadata document: its
            client id where the authorization server supports client ID metadata
            documents (else the client registers itself).
        timeout: Seconds the user has to log in.
        interactive: Whether a person can log in (False: a kept login is used and
            refreshed, but none is made; a server asking for one is sent the request
            as it is, and refuses it).

    A store named by its kind is chosen when first used (in a worker thread): then
    ``"keyring"`` without the ``keyring`` extra raises ImportError, and without a
    working keyring `AuthError`.
    """
    shown = prompt or log_prompt
    redirect = LoopbackRedirect(
        url, 0, browser=browser, prompt=shown, timeout=timeout, interactive=interactive
    )
    return _LastingLogin(
        redirect,
        StoredLogin(chosen_store(store), url),
        server_url=url,
        client_metadata=_metadata(client_name, redirect),
        redirect_handler=redirect.open,
        callback_handler=redirect.callback,
        client_metadata_url=client_metadata_url,
    )


def _metadata(client_name: str, redirect: LoopbackRedirect) -> OAuthClientMetadata:
    """What the client registers: a public client redirected to ``redirect``."""
    return OAuthClientMetadata(
        client_name=client_name,
        redirect_uris=[AnyUrl(redirect.uri)],  # its port is set when the login is read
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )


def oauth_client_credentials(
    url: str,
    *,
    client_id: str,
    client_secret: str,
    issuer: str,
    scope: str | None = None,
) -> httpx2.Auth:
    """An ``httpx2.Auth`` for a machine: the `mcp` SDK's client credentials grant, with a
    client registered beforehand at ``issuer`` (its tokens are kept in memory only: the
    secret gets new ones).

    Args:
        url: The MCP server's URL.
        client_id: The client's id at the authorization server.
        client_secret: Its secret (sent to ``issuer``'s token endpoint only).
        issuer: The authorization server that registered the client: the secret is
            never sent to any other, whatever the MCP server names.
        scope: The scopes to ask for (default: those the server names).
    """
    # Imported here: it imports a JOSE library, which nothing else of a client needs.
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    return ClientCredentialsOAuthProvider(
        server_url=url,
        storage=_Memory(),
        client_id=client_id,
        client_secret=client_secret,
        scope=scope,
        issuer=issuer,
    )


class _Memory:
    """A ``TokenStorage`` in memory (a machine's tokens: its secret gets new ones)."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info


async def forget_login(url: str, *, store: LoginStore | LoginStoreKind = "auto") -> bool:
    """Drop the login ``store`` keeps for the MCP server at ``url`` (its tokens and
    client registration: the next connection logs in anew); whether there was one.
    Nothing is revoked at the authorization server.

    Raises:
        ImportError: ``store="keyring"`` without the ``keyring`` extra.
        AuthError: ``store="keyring"`` without a working keyring.
    """
    chosen = chosen_store(store)
    return await StoredLogin(chosen, url).forget()
