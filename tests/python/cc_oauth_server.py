"""An MCP server whose tokens come from the client credentials grant, built on the PyPI `mcp` SDK.

The SDK is the resource server: its bearer middleware (the 401 challenge with
`resource_metadata`), RFC 9728 protected resource metadata and a `TokenVerifier`. The SDK's
authorization server has no client credentials grant, so this file adds a small real one beside
it: RFC 8414 metadata and a `/token` endpoint for `grant_type=client_credentials` with
`client_secret_basic`, `client_secret_post` or `private_key_jwt` (RFC 7523: the assertion's
signature checked with PyJWT against `--public-key`, `iss` = `sub` = the client id, `aud` the
issuer, `exp` in the future, a `jti` never seen before), and for the JWT bearer grant
(`urn:ietf:params:oauth:grant-type:jwt-bearer`) with a workload token signed by
`--workload-key`'s private half (`aud` the issuer), or with `--jag-key` an identity assertion
grant of enterprise-managed authorization (an ID-JAG of tests/python/idp_server.py: its `typ`,
signature, `aud` and `resource` checked, the client authenticated and the one it names).

Tokens are opaque and die on the server's side after `--token-uses` authenticated requests (or
`--token-ttl` seconds), whatever `expires_in` the client believes: a client keeps working only if
it gets a new token by itself. Test-only route: `GET /stats` (tokens issued, rejected requests,
refused token requests, the auth methods used).

Prints `READY <port>` once the port accepts connections.
"""

import argparse
import base64
import secrets
import threading
import time
from urllib.parse import unquote

import jwt
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from ready import announce


class Tokens:
    """Issued tokens, each with the requests it has left and its expiry."""

    def __init__(self, uses: int, ttl: int, resource: str, expires_in: int = 3600):
        self.expires_in = expires_in
        self.uses = uses
        self.ttl = ttl
        self.resource = resource
        self.live: dict[str, list] = {}
        self.stats = {"issued": 0, "rejected": 0, "refused": 0, "methods": [], "workloads": []}

    def issue(self, client_id: str, scopes: list[str]) -> dict:
        token = "cc-" + secrets.token_hex(20)
        self.live[token] = [self.uses, time.time() + self.ttl, client_id, scopes]
        self.stats["issued"] += 1
        # The client is told `--expires-in` (an hour by default): only the server knows when
        # the token really dies.
        return {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in, "scope": " ".join(scopes)}

    async def verify_token(self, token: str) -> AccessToken | None:
        entry = self.live.get(token)
        if entry is None or entry[0] <= 0 or entry[1] < time.time():
            self.live.pop(token, None)
            self.stats["rejected"] += 1
            return None
        entry[0] -= 1
        return AccessToken(token=token, client_id=entry[2], scopes=entry[3], expires_at=int(entry[1]), resource=self.resource)


def build(args) -> MCPServer:
    base = f"http://127.0.0.1:{args.port}"
    tokens = Tokens(args.token_uses, args.token_ttl, f"{base}/mcp", args.expires_in)
    public_key = open(args.public_key).read() if args.public_key else None
    workload_key = open(args.workload_key).read() if args.workload_key else None
    seen_jti: set[str] = set()
    auth = AuthSettings(
        issuer_url=base, resource_server_url=f"{base}/mcp", required_scopes=["mcp"], validate_token_resource=True
    )
    server = MCPServer("py-client-credentials", token_verifier=tokens, auth=auth)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text as it came."""
        return text

    @server.custom_route("/.well-known/oauth-authorization-server", methods=["GET"])
    async def metadata(_: Request) -> JSONResponse:
        return JSONResponse(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"],
                "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256"],
                "scopes_supported": ["mcp"],
                "response_types_supported": ["code"],
            }
        )

    def refuse(error: str, why: str, status: int = 400) -> JSONResponse:
        tokens.stats["refused"] += 1
        return JSONResponse({"error": error, "error_description": why}, status_code=status)

    def client_of(request: Request, form) -> tuple[str | None, str]:
        """The authenticated client id (None if refused) and the method used."""
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            raw = base64.b64decode(header[6:]).decode()
            cid, _, secret = raw.partition(":")
            cid, secret = unquote(cid), unquote(secret)
            ok = cid == args.client_id and secret == args.client_secret and args.client_secret
            return (cid if ok else None), "client_secret_basic"
        if form.get("client_assertion"):
            if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" or not public_key:
                return None, "private_key_jwt"
            try:
                claims = jwt.decode(
                    form["client_assertion"], public_key, algorithms=["RS256", "ES256"], audience=base,
                    options={"require": ["iss", "sub", "aud", "exp", "jti"]},
                )
            except jwt.PyJWTError:
                return None, "private_key_jwt"
            if claims["iss"] != args.client_id or claims["sub"] != args.client_id or claims["jti"] in seen_jti:
                return None, "private_key_jwt"
            if claims["exp"] - time.time() > 300:
                return None, "private_key_jwt"
            seen_jti.add(claims["jti"])
            return args.client_id, "private_key_jwt"
        if form.get("client_secret"):
            ok = form.get("client_id") == args.client_id and form.get("client_secret") == args.client_secret
            return (args.client_id if ok else None), "client_secret_post"
        return None, "none"

    @server.custom_route("/token", methods=["POST"])
    async def token(request: Request) -> JSONResponse:
        form = await request.form()
        if form.get("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer" and args.jag_key:
            # Enterprise-managed authorization: an ID-JAG from the IdP, for a client that
            # authenticates itself and is the one the grant names.
            try:
                header = jwt.get_unverified_header(form.get("assertion") or "")
                claims = jwt.decode(form.get("assertion") or "", open(args.jag_key).read(), algorithms=["ES256"], audience=base)
            except jwt.PyJWTError as e:
                return refuse("invalid_grant", f"ID-JAG refused: {type(e).__name__}")
            if header.get("typ") != "oauth-id-jag+jwt":
                return refuse("invalid_grant", "not an ID-JAG")
            cid, method = client_of(request, form)
            if cid is None or claims.get("client_id") != cid:
                return refuse("invalid_client", f"client authentication failed ({method}) or not the grant's client", 401)
            if form.get("resource") != f"{base}/mcp" or claims.get("resource") != f"{base}/mcp":
                return refuse("invalid_target", "resource must be this server")
            tokens.stats["methods"].append("id_jag")
            tokens.stats["workloads"].append(claims.get("sub"))
            scopes = (form.get("scope") or "mcp").split()
            return JSONResponse(tokens.issue(claims.get("sub") or "", scopes), headers={"Cache-Control": "no-store"})
        if form.get("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            if not workload_key:
                return refuse("unsupported_grant_type", "no workload issuer configured")
            try:
                claims = jwt.decode(form.get("assertion") or "", workload_key, algorithms=["RS256", "ES256"], audience=base)
            except jwt.PyJWTError as e:
                return refuse("invalid_grant", f"workload token refused: {type(e).__name__}")
            if form.get("resource") != f"{base}/mcp":
                return refuse("invalid_target", "resource must be this server")
            tokens.stats["workloads"].append(claims.get("sub"))
            tokens.stats["methods"].append("jwt_bearer")
            scopes = (form.get("scope") or "mcp").split()
            return JSONResponse(tokens.issue(claims.get("sub") or "", scopes), headers={"Cache-Control": "no-store"})
        if form.get("grant_type") != "client_credentials":
            return refuse("unsupported_grant_type", "only client_credentials")
        cid, method = client_of(request, form)
        if cid is None:
            return refuse("invalid_client", f"client authentication failed ({method})", 401)
        if form.get("resource") != f"{base}/mcp":
            return refuse("invalid_target", "resource must be this server")
        tokens.stats["methods"].append(method)
        scopes = (form.get("scope") or "mcp").split()
        return JSONResponse(tokens.issue(cid, scopes), headers={"Cache-Control": "no-store"})

    @server.custom_route("/stats", methods=["GET"])
    async def stats(_: Request) -> JSONResponse:
        return JSONResponse(tokens.stats)

    return server


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--client-id", default="ci-job")
    ap.add_argument("--client-secret", default="")
    ap.add_argument("--public-key", help="PEM public key of private_key_jwt clients")
    ap.add_argument("--workload-key", help="PEM public key of the workload tokens' issuer")
    ap.add_argument("--jag-key", help="PEM public key of the enterprise IdP that signs ID-JAGs (read when one comes)")
    ap.add_argument("--token-uses", type=int, default=1000, help="authenticated requests a token is good for")
    ap.add_argument("--token-ttl", type=int, default=3600, help="seconds a token is good for")
    ap.add_argument("--expires-in", type=int, default=3600, help="the expires_in the client is told")
    args = ap.parse_args()
    server = build(args)
    threading.Thread(target=announce, args=(args.port,), daemon=True).start()
    server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
