"""An enterprise identity provider for enterprise-managed authorization: a small real OpenID
Connect provider (ES256 ID tokens signed with PyJWT) and RFC 8693 token exchange for identity
assertion grants (ID-JAG, `typ: oauth-id-jag+jwt`).

- `GET /.well-known/openid-configuration`: its metadata (PKCE S256, `iss` in redirects).
- `GET /authorize`: a user already signed in at the IdP: checks the client, the loopback
  redirect URI, PKCE S256 and `openid`, then redirects at once with a code, `state` and `iss`.
- `POST /token`: `authorization_code` (PKCE checked; an ID token with the login's `nonce`, aud
  the client, and a refresh token), `refresh_token` (a new ID token), and the token exchange
  (the subject ID token's signature, audience and expiry checked; `audience` and `resource`
  required) issuing an ID-JAG for `--jag-client-id` with `aud` the requested audience.

ID tokens live `--id-token-ttl` seconds. The public key is written to `--key-out` (PEM) before
`READY <port>`, for the authorization server that checks the ID-JAGs. Test-only route:
`GET /stats` (logins, refreshes, exchanges, refusals, and every token issued, so tests can look
for them where they must not be).
"""

import argparse
import base64
import hashlib
import secrets
import threading
import time
import uuid

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route

from ready import announce

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"


def build(args) -> Starlette:
    base = f"http://127.0.0.1:{args.port}"
    key = ec.generate_private_key(ec.SECP256R1())
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with open(args.key_out, "wb") as f:
        f.write(public_pem)
    codes: dict[str, dict] = {}
    refresh_tokens: set[str] = set()
    stats = {"logins": 0, "refreshes": 0, "exchanges": 0, "refused": [], "tokens": [], "audiences": []}

    def refuse(error: str, why: str, status: int = 400) -> JSONResponse:
        stats["refused"].append(f"{error}: {why}")
        return JSONResponse({"error": error, "error_description": why}, status_code=status)

    def id_token(nonce: str | None) -> str:
        now = int(time.time())
        claims = {"iss": base, "sub": "alice@example.com", "aud": args.client_id, "iat": now, "exp": now + args.id_token_ttl}
        if nonce:
            claims["nonce"] = nonce
        token = jwt.encode(claims, key, algorithm="ES256")
        stats["tokens"].append(token)
        return token

    async def metadata(_: Request) -> JSONResponse:
        return JSONResponse(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "jwks_uri": f"{base}/jwks",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", TOKEN_EXCHANGE],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": True,
                "id_token_signing_alg_values_supported": ["ES256"],
                "subject_types_supported": ["public"],
            }
        )

    async def authorize(request: Request):
        q = request.query_params
        redirect = q.get("redirect_uri", "")
        if q.get("client_id") != args.client_id or not redirect.startswith("http://127.0.0.1:"):
            return refuse("invalid_request", "unknown client or redirect URI")
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return refuse("invalid_request", "PKCE S256 required")
        if "openid" not in (q.get("scope") or "").split():
            return refuse("invalid_scope", "openid required")
        code = secrets.token_urlsafe(16)
        codes[code] = {"challenge": q["code_challenge"], "nonce": q.get("nonce"), "redirect": redirect}
        sep = "&" if "?" in redirect else "?"
        state = q.get("state", "")
        return RedirectResponse(f"{redirect}{sep}code={code}&state={state}&iss={base}", status_code=302)

    async def token(request: Request) -> JSONResponse:
        form = await request.form()
        grant = form.get("grant_type")
        if grant == "authorization_code":
            entry = codes.pop(form.get("code") or "", None)
            if entry is None or form.get("redirect_uri") != entry["redirect"] or form.get("client_id") != args.client_id:
                return refuse("invalid_grant", "unknown code, redirect URI or client")
            digest = hashlib.sha256((form.get("code_verifier") or "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != entry["challenge"]:
                return refuse("invalid_grant", "PKCE verifier does not match")
            stats["logins"] += 1
            rt = secrets.token_urlsafe(24)
            refresh_tokens.add(rt)
            return JSONResponse(
                {"access_token": secrets.token_urlsafe(24), "token_type": "Bearer", "expires_in": 3600,
                 "id_token": id_token(entry["nonce"]), "refresh_token": rt, "scope": "openid"}
            )
        if grant == "refresh_token":
            if form.get("refresh_token") not in refresh_tokens:
                return refuse("invalid_grant", "unknown refresh token")
            stats["refreshes"] += 1
            return JSONResponse(
                {"access_token": secrets.token_urlsafe(24), "token_type": "Bearer", "expires_in": 3600,
                 "id_token": id_token(None)}
            )
        if grant != TOKEN_EXCHANGE:
            return refuse("unsupported_grant_type", f"not {grant}")
        if form.get("subject_token_type") != ID_TOKEN_TYPE or form.get("requested_token_type") != ID_JAG_TYPE:
            return refuse("invalid_request", "an ID token for an ID-JAG only")
        audience, resource = form.get("audience"), form.get("resource")
        if not audience or not resource:
            return refuse("invalid_request", "audience and resource required")
        try:
            claims = jwt.decode(form.get("subject_token") or "", key.public_key(), algorithms=["ES256"], audience=args.client_id, issuer=base)
        except jwt.PyJWTError as e:
            return refuse("invalid_grant", f"subject token refused: {type(e).__name__}")
        now = int(time.time())
        jag = jwt.encode(
            {"iss": base, "sub": claims["sub"], "aud": audience, "resource": resource, "client_id": args.jag_client_id,
             "jti": str(uuid.uuid4()), "iat": now, "exp": now + 300, "scope": form.get("scope") or ""},
            key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"},
        )
        stats["exchanges"] += 1
        stats["tokens"].append(jag)
        stats["audiences"].append(audience)
        return JSONResponse({"access_token": jag, "issued_token_type": ID_JAG_TYPE, "token_type": "N_A", "expires_in": 300})

    async def show_stats(_: Request) -> JSONResponse:
        return JSONResponse(stats)

    return Starlette(
        routes=[
            Route("/.well-known/openid-configuration", metadata),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Route("/stats", show_stats),
        ]
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--client-id", default="h9-sso", help="harness9's client at the IdP")
    ap.add_argument("--jag-client-id", default="ci-job", help="the client the ID-JAGs are for at the authorization server")
    ap.add_argument("--key-out", required=True, help="where the public key (PEM) is written")
    ap.add_argument("--id-token-ttl", type=int, default=3600, help="seconds an ID token lives")
    args = ap.parse_args()
    app = build(args)
    threading.Thread(target=announce, args=(args.port,), daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
