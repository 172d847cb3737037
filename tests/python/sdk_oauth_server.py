"""An OAuth-protected MCP server built on the PyPI `mcp` SDK's own authorization support.

The SDK serves everything an OAuth client meets in the wild: the 401 challenge with
`resource_metadata`, RFC 9728 protected resource metadata, RFC 8414 authorization server
metadata, dynamic client registration, `/authorize` (PKCE S256 checked by the SDK), `/token`
(authorization code and refresh grants, client authentication) and `/revoke`. This file only
supplies the provider: an in-memory store whose "user" consents at once (the authorize step
redirects straight back to the client with a code), with short-lived access tokens so a test
can watch them expire.

Test-only routes (no authentication): `GET /stats` (logins and refreshes so far),
`POST /expire-all` (every access token expires now, whatever the client believes) and
`POST /revoke-all` (the authorization server revokes every token, as an admin would).

Prints `READY <port>` once the port accepts connections.
"""

import argparse
import secrets
import threading
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from ready import announce


class Provider:
    """Everything in memory; tokens are random and opaque."""

    def __init__(self, ttl: int, resource: str):
        self.ttl = ttl
        self.resource = resource
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {"registrations": 0, "logins": 0, "refreshes": 0, "rejected": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.stats["registrations"] += 1
        self.clients[client_info.client_id or ""] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = "code-" + secrets.token_hex(20)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="test-user",
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        at = "at-" + secrets.token_hex(20)
        rt = "rt-" + secrets.token_hex(20)
        expires = int(time.time()) + self.ttl
        self.access[at] = AccessToken(
            token=at, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[rt] = RefreshToken(token=rt, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=at,
            token_type="Bearer",
            expires_in=self.ttl,
            refresh_token=rt,
            scope=" ".join(scopes) if scopes else None,
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        self.stats["logins"] += 1
        return self._issue(client.client_id or "", authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token revoked")
        self.stats["refreshes"] += 1
        return self._issue(client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            self.stats["rejected"] += 1
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def build(port: int, ttl: int) -> tuple[MCPServer, Provider]:
    base = f"http://127.0.0.1:{port}"
    provider = Provider(ttl, f"{base}/mcp")
    auth = AuthSettings(
        issuer_url=base,
        resource_server_url=f"{base}/mcp",
        validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=["mcp"],
    )
    server = MCPServer("py-oauth", auth_server_provider=provider, auth=auth)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text as it came."""
        return text

    @server.custom_route("/stats", methods=["GET"])
    async def stats(_: Request) -> JSONResponse:
        return JSONResponse(provider.stats)

    @server.custom_route("/expire-all", methods=["POST"])
    async def expire_all(_: Request) -> PlainTextResponse:
        for token in provider.access.values():
            token.expires_at = 0
        return PlainTextResponse("expired")

    @server.custom_route("/revoke-all", methods=["POST"])
    async def revoke_all(_: Request) -> PlainTextResponse:
        provider.access.clear()
        provider.refresh.clear()
        return PlainTextResponse("revoked")

    return server, provider


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--token-ttl", type=int, default=3600, help="access token lifetime, seconds")
    args = ap.parse_args()
    server, _ = build(args.port, args.token_ttl)
    threading.Thread(target=announce, args=(args.port,), daemon=True).start()
    server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
