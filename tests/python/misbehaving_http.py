"""An MCP Streamable HTTP server that misbehaves on purpose (stdlib only), for harness9's tests.

--mode: ok | sse | stateless-only (2026-07-28 only: `initialize` refused with -32601,
          `server/discover` answered after --discover-delay MS) | status500 | html | cut-sse | stall | expire | bearer | legacy-only | stateless-cut
        | strict-init (a request before `initialized` has been answered is refused; that answer
          takes 300 ms) | expire-on (the session ends after a call whose text is "expire")
        | legacy-evil (legacy transport whose endpoint event names --other-port)
        | chunked (a tool call's JSON reply is sent chunked, 1 MiB a chunk; with --barrier N
          once N calls are in)
        | quote (a tool call's result is an error quoting the bare bearer token and the request's
          path and query)
        | redirect-loop (/mcp -> /mcp2 -> /mcp) | redirect-away (307 to --other-port)
        | flood-get (the GET stream floods ping requests; POSTed answers are never read: each
          such POST stalls) | close-body / close-sse (HTTP/1.1 replies without Content-Length or chunked encoding:
          the body runs to the connection's close)
        | oauth (an OAuth-protected server that is its own authorization server: protected
          resource and server metadata, dynamic registration, PKCE S256 codes, access tokens
          that live --token-ttl seconds, rotating refresh tokens; POST /revoke forgets every
          token, POST /expire-all makes every access token expire now, GET /hop?to=URL redirects to URL, GET /stats counts logins and refreshes (and failed ones) and lists the scopes each login asked
          for; with --admin-tool NAME, calling NAME with a token without scope `admin` gets
          403 insufficient_scope, scope="mcp admin"; with --admin-discover, server/discover too;
          with --stateless, a 2026-07-28-only server past the token checks, `initialize` not
          guarded; --challenge-scope S: the 401 challenge's scope, default "mcp"); hostile on purpose with:
          --prm-url URL (the 401 challenge's resource_metadata), --as-url URL (the protected
          resource metadata's authorization server), --token-redirect URL (POST /token answers
          307 to URL), --drip (the authorization server metadata comes one byte per 2 s),
          --stepup-junk (each 403 names five fresh scopes, one with a quote and one of 300 bytes),
          --stepup-scope S (repeatable: the k-th 403 names the k-th S, the last one after that), --bad-token
          crlf|esc with --bad-token-on login|refresh (that grant's access token carries CR/LF or
          ESC), --expires-in N (the expires_in told, whatever --token-ttl is), --auth-endpoint
          STRING (the authorization endpoint its metadata names, e.g. `--evil` or
          `file:///etc/passwd`), --dpop (DPoP-bound tokens, RFC 9449: the metadata lists ES256,
          every token request and MCP request must carry a valid proof (checked with PyJWT:
          signature, typ, htm, htu, iat, a fresh jti, ath and the key the token is bound to; a
          refresh token is bound too), `Authorization: DPoP`, the 401 challenge is `DPoP ...`),
          --dpop-nonce (and a nonce: 400/401 `use_dpop_nonce` with `DPoP-Nonce` until a proof
          carries it; the resource server's changes every --rs-nonce-every accepted requests;
          --nonce-never as|rs: that server asks again whatever the proof carries);
          --authorized-away URL (an authorized POST to /mcp answers 307 to URL, another origin);
          /stats then adds the proofs accepted, the nonce challenges, and every rejection's reason
--tls DIR: serve HTTPS with a certificate for 127.0.0.1 signed by a fresh CA, whose
certificate is written to DIR/ca.pem first (a client trusts it with SSL_CERT_FILE).
Prints `READY <port>` on stdout once listening. Endpoint: /mcp (legacy: /sse + /messages).
"""

import argparse
import base64
import hashlib
import json
import queue
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KNOWN = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
TOOLS = [
    {"name": "echo", "description": "echo text", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "big", "description": "bytes of x", "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}},
    {"name": "sleep", "description": "sleep ms", "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}}},
]

ARGS = None
BARRIER = None
# Set when a GET stream got through (oauth --dpop): `echo` with "after_get" answers after it.
GOT_GET = threading.Event()
SESSIONS = set()
INITIALIZED = set()
LEGACY = {}  # session -> queue of outgoing SSE payloads
LOCK = threading.Lock()
# stateless-cut: tools/call requests seen (the first one's stream breaks).
CALLS = [0]
# oauth: codes -> (code_challenge, redirect_uri, scopes), live access tokens -> (expiry,
# scopes), refresh tokens -> scopes.
OAUTH = {"codes": {}, "access": {}, "refresh": {}, "n": 0, "logins": 0, "refreshes": 0, "asked": [],
         "stepups": 0}
# oauth --dpop: token -> the thumbprint of the key it is bound to, the jtis seen, the counts.
DPOP = {"bound": {}, "jtis": set(), "token_proofs": 0, "mcp_proofs": 0, "as_nonce_challenges": 0,
        "rs_nonce_challenges": 0, "get_proofs": 0, "rejected": [], "schemes": [], "rs_nonce_n": 0, "accepted_since": 0}
AS_NONCE = "as-nonce-1"


def rs_nonce():
    return f"rs-nonce-{DPOP['rs_nonce_n']}"


def check_proof(proof, htm, htu, token=None):
    """The thumbprint of a valid DPoP proof's key, else (None, why)."""
    import jwt  # PyJWT with cryptography: only this mode needs it
    if not proof or "," in proof:
        return None, "missing or several DPoP headers", None
    try:
        hdr = jwt.get_unverified_header(proof)
        jwk = hdr.get("jwk") or {}
        if hdr.get("typ") != "dpop+jwt" or hdr.get("alg") != "ES256" or "d" in jwk:
            return None, "bad header " + json.dumps(hdr), None
        key = jwt.PyJWK(jwk, algorithm="ES256").key
        claims = jwt.decode(proof, key, algorithms=["ES256"], options={"verify_aud": False})
    except Exception as e:  # noqa: BLE001 - any failure is a rejection
        return None, f"does not verify: {e}", None
    if claims.get("htm") != htm or claims.get("htu") != htu:
        return None, f"htm/htu {claims.get('htm')} {claims.get('htu')} for {htm} {htu}", None
    if abs(time.time() - claims.get("iat", 0)) > 60:
        return None, "iat", None
    with LOCK:
        if claims.get("jti") in DPOP["jtis"]:
            return None, "jti replayed", None
        DPOP["jtis"].add(claims.get("jti"))
    if token is not None:
        ath = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
        if claims.get("ath") != ath:
            return None, "ath", None
    canon = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    jkt = base64.urlsafe_b64encode(hashlib.sha256(canon.encode()).digest()).rstrip(b"=").decode()
    return jkt, None, claims.get("nonce")


def dpop_reject(why):
    with LOCK:
        DPOP["rejected"].append(why)


def base():
    return f"http://127.0.0.1:{ARGS.port}"


def issue_tokens(scopes, grant="login"):
    with LOCK:
        OAUTH["n"] += 1
        n = OAUTH["n"]
        access, refresh = f"at-{n}-{uuid.uuid4().hex}", f"rt-{n}-{uuid.uuid4().hex}"
        if ARGS.bad_token and ARGS.bad_token_on == grant:
            access += {"crlf": "\r\nX-Injected: 1", "esc": "\x1b]52;c;aGk=\x07"}[ARGS.bad_token]
        OAUTH["access"][access] = (time.time() + ARGS.token_ttl, scopes)
        OAUTH["refresh"][refresh] = scopes
    told = ARGS.token_ttl if ARGS.expires_in is None else ARGS.expires_in
    return {"access_token": access, "token_type": "DPoP" if ARGS.dpop else "Bearer", "expires_in": told,
            "refresh_token": refresh, "scope": " ".join(scopes)}


def record(handler, body):
    if not ARGS.record:
        return
    line = json.dumps({"method": handler.command, "path": handler.path, "headers": dict(handler.headers), "body": body.decode("utf-8", "replace")})
    with LOCK, open(ARGS.record, "a") as f:
        f.write(line + "\n")


def answer(msg):
    """The JSON-RPC reply to one request (None for notifications/responses)."""
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if mid is None or method is None:
        return None
    if method == "initialize":
        asked = params.get("protocolVersion")
        result = {"protocolVersion": asked if asked in KNOWN else "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "http-fixture", "version": "1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            if args.get("after_get"):
                GOT_GET.wait(10)
            text = str(args.get("text", ""))
        elif name == "big":
            text = "x" * int(args.get("bytes", 0))
        elif name == "sleep":
            time.sleep(int(args.get("ms", 0)) / 1000)
            text = "slept"
        else:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": f"unknown tool {name}"}}
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def start_sse(self, headers=()):
        """An SSE response with chunked transfer encoding, as real servers send."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()

    def end_headers(self):
        if ARGS.set_cookie:
            self.send_header("Set-Cookie", ARGS.set_cookie)
            self.send_header("Authentication-Info", f'nextnonce="{ARGS.set_cookie}"')
        super().end_headers()

    def chunk(self, data: bytes):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *a):
        pass

    def send_plain(self, code, body, ctype="text/plain", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_DELETE(self):
        record(self, b"")
        with LOCK:
            SESSIONS.discard(self.headers.get("Mcp-Session-Id"))
        self.send_plain(200, "")

    def oauth_get(self):
        """The oauth mode's GETs; False when the path is the MCP endpoint's."""
        from urllib.parse import urlparse, parse_qs, urlencode
        url = urlparse(self.path)
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            self.send_plain(200, json.dumps({"resource": base() + "/mcp",
                                             "authorization_servers": [ARGS.as_url or base()],
                                             "scopes_supported": ["mcp"]}), "application/json")
        elif url.path == "/.well-known/oauth-authorization-server" and ARGS.drip:
            body = json.dumps({"issuer": base()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for b in body:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(2)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif url.path == "/.well-known/oauth-authorization-server":
            self.send_plain(200, json.dumps({
                "issuer": base(),
                "authorization_endpoint": ARGS.auth_endpoint or base() + "/authorize",
                "token_endpoint": base() + "/token", "registration_endpoint": base() + "/register",
                "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["mcp", "admin", "offline_access"],
                "authorization_response_iss_parameter_supported": True,
                **({"dpop_signing_alg_values_supported": ["ES256"]} if ARGS.dpop else {})}),
                "application/json")
        elif url.path == "/authorize":
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            if q.get("code_challenge_method") != "S256" or q.get("resource") != base() + "/mcp":
                self.send_plain(400, "bad authorization request")
                return True
            code = "code-" + uuid.uuid4().hex
            scopes = q.get("scope", "mcp").split()
            with LOCK:
                OAUTH["codes"][code] = (q["code_challenge"], q["redirect_uri"], scopes)
                OAUTH["asked"].append(" ".join(scopes))
            back = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", ""), "iss": base()})
            self.send_plain(302, "", headers=[("Location", back)])
        elif url.path == "/hop":
            self.send_plain(302, "", headers=[("Location", parse_qs(url.query)["to"][0])])
        elif url.path == "/stats":
            with LOCK:
                stats = {"logins": OAUTH["logins"], "refreshes": OAUTH["refreshes"],
                         "failed_refreshes": OAUTH.get("failed_refreshes", 0),
                         "asked": OAUTH["asked"],
                         **{k: v for k, v in DPOP.items() if k not in ("jtis", "bound")}}
            self.send_plain(200, json.dumps(stats), "application/json")
        elif url.path.startswith("/.well-known/"):
            self.send_plain(404, "not found")
        else:
            return False
        return True

    def oauth_post(self, raw):
        """The oauth mode's POSTs to the authorization server; False for other paths."""
        from urllib.parse import parse_qs
        if self.path == "/register":
            meta = json.loads(raw or b"{}")
            self.send_plain(201, json.dumps({"client_id": "client-" + uuid.uuid4().hex[:8],
                                             "redirect_uris": meta.get("redirect_uris", []),
                                             "token_endpoint_auth_method": "none"}), "application/json")
        elif self.path == "/token" and ARGS.token_redirect:
            self.send_plain(307, "", headers=[("Location", ARGS.token_redirect)])
        elif self.path == "/token":
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}

            def bad(why):
                self.send_plain(400, json.dumps({"error": "invalid_grant", "error_description": why}),
                                "application/json")
                return True

            if form.get("resource") != base() + "/mcp":
                return bad("wrong resource")
            jkt = None
            if ARGS.dpop:
                jkt, why, nonce = check_proof(self.headers.get("DPoP"), "POST", base() + "/token")
                if jkt is None:
                    dpop_reject("token: " + why)
                    self.send_plain(400, json.dumps({"error": "invalid_dpop_proof", "error_description": why}),
                                    "application/json")
                    return True
                if ARGS.dpop_nonce and (nonce != AS_NONCE or ARGS.nonce_never == "as"):
                    with LOCK:
                        DPOP["as_nonce_challenges"] += 1
                    self.send_plain(400, json.dumps({"error": "use_dpop_nonce"}), "application/json",
                                    headers=[("DPoP-Nonce", AS_NONCE)])
                    return True
                if form.get("grant_type") == "refresh_token":
                    with LOCK:
                        held = DPOP["bound"].get(form.get("refresh_token"))
                    if held != jkt:
                        dpop_reject("refresh with another key")
                        return bad("refresh token bound to another key")
                with LOCK:
                    DPOP["token_proofs"] += 1
            if form.get("grant_type") == "authorization_code":
                with LOCK:
                    challenge, redirect, scopes = OAUTH["codes"].pop(form.get("code"), (None, None, []))
                digest = base64.urlsafe_b64encode(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
                if challenge is None or digest.rstrip(b"=").decode() != challenge or form.get("redirect_uri") != redirect:
                    return bad("bad code, verifier or redirect_uri")
                with LOCK:
                    OAUTH["logins"] += 1
            elif form.get("grant_type") == "refresh_token":
                with LOCK:
                    scopes = OAUTH["refresh"].pop(form.get("refresh_token"), None)
                    known = scopes is not None
                    if known:
                        OAUTH["refreshes"] += 1
                    else:
                        OAUTH["failed_refreshes"] = OAUTH.get("failed_refreshes", 0) + 1
                if ARGS.refresh_race and known:
                    # Held until another refresh with the same (now spent) token came in.
                    REFRESH_RACE.wait(timeout=30)
                if not known:
                    if ARGS.refresh_race:
                        REFRESH_RACE.set()
                        # Answered after the winner's answer had time to reach its store.
                        time.sleep(1.0)
                    return bad("unknown refresh token")
            else:
                return bad("unsupported grant type")
            grant = "login" if form.get("grant_type") == "authorization_code" else "refresh"
            tokens = issue_tokens(scopes, grant)
            if jkt is not None:
                with LOCK:
                    DPOP["bound"][tokens["access_token"]] = jkt
                    DPOP["bound"][tokens["refresh_token"]] = jkt
            self.send_plain(200, json.dumps(tokens), "application/json")
        elif self.path == "/expire-all":
            with LOCK:
                for token, (_, scopes) in list(OAUTH["access"].items()):
                    OAUTH["access"][token] = (0, scopes)
            self.send_plain(200, "expired")
        elif self.path == "/revoke":
            with LOCK:
                OAUTH["access"].clear()
                OAUTH["refresh"].clear()
            self.send_plain(200, "revoked")
        else:
            return False
        return True

    def oauth_denied(self, raw=b""):
        """True (after a 401) unless the request carries a live access token; True after a 403
        `insufficient_scope` for a call of --admin-tool with a token without scope `admin`."""
        auth = self.headers.get("Authorization") or ""
        scheme = "DPoP " if ARGS.dpop else "Bearer "
        token = auth[len(scheme):] if auth.startswith(scheme) else None
        with LOCK:
            expiry, scopes = OAUTH["access"].get(token, (None, []))
        prm = ARGS.prm_url or "/.well-known/oauth-protected-resource/mcp"
        prm = base() + prm if prm.startswith("/") else prm
        if ARGS.dpop and auth:
            with LOCK:
                DPOP["schemes"].append(auth.split(" ")[0])
        if ARGS.dpop and expiry is not None and expiry > time.time():
            path = self.path.split("?")[0].split("#")[0]
            jkt, why, nonce = check_proof(self.headers.get("DPoP"), self.command, base() + path, token)
            if jkt is not None and jkt != DPOP["bound"].get(token):
                jkt, why = None, "proof key is not the token's"
            if jkt is None:
                dpop_reject(f"{self.command} {path}: {why}")
                self.send_plain(401, json.dumps({"error": "invalid_dpop_proof"}), "application/json",
                                headers=[("WWW-Authenticate", 'DPoP error="invalid_dpop_proof"')])
                return True
            if ARGS.dpop_nonce:
                with LOCK:
                    current = rs_nonce()
                    # --rs-challenge-first-get: the first GET is asked for the nonce it carries,
                    # so the GET stream's one retry is exercised whatever else runs beside it.
                    first_get = (self.command == "GET" and ARGS.rs_challenge_first_get
                                 and not DPOP.get("first_get_challenged"))
                    if first_get:
                        DPOP["first_get_challenged"] = True
                        nonce = None
                    if nonce == current and ARGS.nonce_never != "rs":
                        DPOP["accepted_since"] += 1
                        if DPOP["accepted_since"] >= ARGS.rs_nonce_every:
                            DPOP["rs_nonce_n"] += 1
                            DPOP["accepted_since"] = 0
                    else:
                        DPOP["rs_nonce_challenges"] += 1
                if nonce != current or ARGS.nonce_never == "rs":
                    self.send_plain(401, json.dumps({"error": "use_dpop_nonce"}), "application/json",
                                    headers=[("WWW-Authenticate", f'DPoP error="use_dpop_nonce", resource_metadata="{prm}"'),
                                             ("DPoP-Nonce", current)])
                    return True
            with LOCK:
                DPOP["mcp_proofs"] += 1
                if self.command == "GET":
                    DPOP["get_proofs"] += 1
                    GOT_GET.set()
        if expiry is not None and expiry > time.time():
            try:
                msg = json.loads(raw or b"{}")
            except ValueError:
                msg = {}
            wants_admin = isinstance(msg, dict) and (
                (msg.get("method") == "tools/call"
                 and (msg.get("params") or {}).get("name") == ARGS.admin_tool)
                or (ARGS.admin_discover and msg.get("method") == "server/discover"))
            if wants_admin and "admin" not in scopes:
                wanted = "mcp admin"
                if ARGS.stepup_scope:
                    with LOCK:
                        OAUTH["stepups"] += 1
                        k = OAUTH["stepups"]
                    wanted = ARGS.stepup_scope[min(k, len(ARGS.stepup_scope)) - 1]
                elif ARGS.stepup_junk:
                    with LOCK:
                        OAUTH["stepups"] += 1
                        k = OAUTH["stepups"]
                    wanted += "".join(f" junk{k}-{i}" for i in range(5)) + ' bad\\"scope ' + "L" * 300
                self.send_plain(403, json.dumps({"error": "insufficient_scope"}), "application/json",
                                headers=[("WWW-Authenticate", f'Bearer error="insufficient_scope", '
                                          f'scope="{wanted}", resource_metadata="{prm}"')])
                return True
            return False
        self.send_plain(401, json.dumps({"error": "invalid_token"}), "application/json",
                        headers=[("WWW-Authenticate", f'{scheme.strip()} resource_metadata="{prm}", scope="{ARGS.challenge_scope}"')])
        return True

    def do_GET(self):
        if ARGS.mode == "oauth" and (self.oauth_get() or self.oauth_denied()):
            return
        record(self, b"")
        if ARGS.mode in ("legacy-only", "legacy-evil") and self.path.split("?")[0] in ("/sse", "/mcp"):
            return self.legacy_stream()
        if ARGS.mode == "flood-get":
            return self.flood_stream()
        self.send_plain(405, "method not allowed")

    def flood_stream(self):
        """Server-to-client requests as fast as the socket takes them, for at most 60 s."""
        self.start_sse()
        end = time.time() + 60
        n = 0
        try:
            while time.time() < end:
                batch = b"".join(
                    b'event: message\ndata: {"jsonrpc":"2.0","id":%d,"method":"ping"}\n\n' % (n + i)
                    for i in range(200))
                n += 200
                self.chunk(batch)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def legacy_stream(self):
        sid = uuid.uuid4().hex
        q = queue.Queue()
        with LOCK:
            LEGACY[sid] = q
        self.start_sse()
        try:
            where = f"http://127.0.0.1:{ARGS.other_port}" if ARGS.mode == "legacy-evil" else ""
            self.chunk(f"event: endpoint\ndata: {where}/messages?session={sid}\n\n".encode())
            while True:
                try:
                    payload = q.get(timeout=15)
                    self.chunk(f"event: message\ndata: {payload}\n\n".encode())
                except queue.Empty:
                    self.chunk(b": keepalive\n\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with LOCK:
                LEGACY.pop(sid, None)
        self.close_connection = True

    def do_POST(self):
        raw = self.body()
        record(self, raw)
        mode = ARGS.mode
        if mode == "oauth" and self.oauth_post(raw):
            return
        # --stateless: `initialize` is not guarded (as the conformance suite's step-up server
        # does): a client that asks with it learns nothing of the challenge.
        open_init = mode == "oauth" and ARGS.stateless and b'"initialize"' in raw
        if mode == "oauth" and not open_init and self.oauth_denied(raw):
            return
        if mode == "oauth" and ARGS.authorized_away:
            # Past the token (and proof) checks: sent on to another origin.
            return self.send_plain(307, "", headers=[("Location", ARGS.authorized_away)])
        if mode == "oauth" and ARGS.stateless:
            try:
                msg = json.loads(raw)
            except ValueError:
                return self.send_plain(400, "bad json")
            return self.stateless_only(msg, (msg.get("params") or {}).get("_meta") or {})
        if mode == "stall":
            time.sleep(3600)
            return
        if mode == "status500":
            return self.send_plain(500, "internal error on purpose")
        if mode == "html":
            return self.send_plain(200, "<html><body>login page</body></html>", "text/html")
        if mode == "bearer" and self.headers.get("Authorization") != "Bearer s3cret-token":
            return self.send_plain(401, "missing or wrong bearer token", headers=[("WWW-Authenticate", ARGS.challenge)])
        if mode == "redirect-loop":
            nxt = "/mcp2" if self.path == "/mcp" else "/mcp"
            return self.send_plain(307, "", headers=[("Location", nxt)])
        if mode == "redirect-away":
            return self.send_plain(307, "", headers=[("Location", f"http://127.0.0.1:{ARGS.other_port}/mcp")])
        if mode in ("legacy-only", "legacy-evil"):
            if self.path.startswith("/messages"):
                sid = self.path.split("session=")[-1]
                with LOCK:
                    q = LEGACY.get(sid)
                if q is None:
                    return self.send_plain(404, "unknown session")
                reply = answer(json.loads(raw or b"{}"))
                self.send_plain(202, "")
                if reply is not None:
                    q.put(json.dumps(reply))
                return
            return self.send_plain(405, "method not allowed")
        try:
            msg = json.loads(raw)
        except ValueError:
            return self.send_plain(400, "bad json")
        meta = (msg.get("params") or {}).get("_meta") or {}
        if mode == "stateless-only":
            return self.stateless_only(msg, meta)
        if mode == "stateless-cut" and meta.get("io.modelcontextprotocol/protocolVersion"):
            # A 2026-07-28 server whose first tools/call stream ends before the response.
            if msg.get("method") == "server/discover":
                result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                          "resultType": "complete"}
                return self.send_plain(200, json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": result}),
                                       "application/json")
            if msg.get("method") == "tools/call":
                with LOCK:
                    CALLS[0] += 1
                    first = CALLS[0] == 1
                if first:
                    self.start_sse()
                    self.chunk(b": working\n\n")
                    self.end_chunks()
                    return
            return self.send_plain(200, json.dumps(answer(msg)), "application/json")
        sid = self.headers.get("Mcp-Session-Id")
        headers = []
        if msg.get("method") == "initialize":
            sid = uuid.uuid4().hex
            with LOCK:
                SESSIONS.add(sid)
            headers.append(("Mcp-Session-Id", sid))
        elif not sid:
            err = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}
            return self.send_plain(400, json.dumps(err), "application/json")
        else:
            with LOCK:
                known = sid in SESSIONS
            if not known:
                return self.send_plain(404, json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}}), "application/json")
        if mode == "flood-get" and "method" not in msg:
            # An answer to one of our pings: never read, like a server that stopped reading.
            time.sleep(30)
            return self.send_plain(202, "")
        if mode == "strict-init":
            if msg.get("method") == "notifications/initialized":
                time.sleep(0.3)
                with LOCK:
                    INITIALIZED.add(sid)
            elif msg.get("method") != "initialize":
                with LOCK:
                    ready = sid in INITIALIZED
                if not ready:
                    err = {"jsonrpc": "2.0", "id": msg.get("id"), "error": {"code": -32600, "message": "request before notifications/initialized"}}
                    return self.send_plain(400, json.dumps(err), "application/json")
        reply = answer(msg)
        if reply is None:
            return self.send_plain(202, "", headers=headers)
        if mode == "chunked" and msg.get("method") == "tools/call":
            # A JSON reply with chunked transfer encoding, 1 MiB a chunk, sent once --barrier
            # calls are in (so that many bodies are read at once).
            if ARGS.barrier > 1:
                try:
                    BARRIER.wait(timeout=20)
                except threading.BrokenBarrierError:
                    pass
            body = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            try:
                for i in range(0, len(body), 1 << 20):
                    self.chunk(body[i:i + (1 << 20)])
                self.end_chunks()
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if mode == "quote" and msg.get("method") == "tools/call":
            # A server that quotes its credentials back: the bare bearer token and the path
            # with its query, in a failed tool result.
            token = (self.headers.get("Authorization") or "").split(" ", 1)[-1]
            text = f"denied for token {token} at {self.path}; you said {reply['result']['content'][0]['text']}"
            reply["result"] = {"content": [{"type": "text", "text": text}], "isError": True}
        if mode == "expire-on" and msg.get("method") == "tools/call" and (msg.get("params") or {}).get("arguments", {}).get("text") == "expire":
            with LOCK:
                SESSIONS.discard(sid)
        if mode == "expire" and msg.get("method") == "tools/call":
            with LOCK:
                SESSIONS.discard(sid)
        if mode == "cut-sse" and msg.get("method") == "tools/call":
            self.start_sse()
            self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","id":')
            # Close mid-event: no end of the event, no last chunk.
            self.close_connection = True
            return
        if mode in ("close-body", "close-sse"):
            sse = mode == "close-sse"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
            self.send_header("Connection", "close")
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            data = json.dumps(reply)
            self.wfile.write((f"event: message\ndata: {data}\n\n" if sse else data).encode())
            self.wfile.flush()
            self.close_connection = True
            return
        if mode == "sse":
            return self.sse_reply(msg, reply, headers)
        self.send_plain(200, json.dumps(reply), "application/json", headers)

    def stateless_only(self, msg, meta):
        """A 2026-07-28-only server: `initialize` is refused (-32601), `server/discover` is
        answered after --discover-delay ms, every other request needs its `_meta` revision."""
        method = msg.get("method")
        if method == "initialize":
            err = {"jsonrpc": "2.0", "id": msg.get("id"),
                   "error": {"code": -32601, "message": "Method not found: initialize (this server speaks 2026-07-28 only)"}}
            return self.send_plain(200, json.dumps(err), "application/json")
        if meta.get("io.modelcontextprotocol/protocolVersion") != "2026-07-28":
            err = {"jsonrpc": "2.0", "id": msg.get("id"),
                   "error": {"code": -32600, "message": "request without _meta protocolVersion 2026-07-28"}}
            return self.send_plain(400, json.dumps(err), "application/json")
        if method == "server/discover":
            if ARGS.discover_delay:
                # A cold start: the answer comes late.
                time.sleep(ARGS.discover_delay / 1000)
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "stateless-only", "version": "1"}, "resultType": "complete"}
            return self.send_plain(200, json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": result}),
                                   "application/json")
        reply = answer(msg)
        if reply is None:
            return self.send_plain(202, "")
        return self.send_plain(200, json.dumps(reply), "application/json")

    def sse_reply(self, msg, reply, headers):
        self.start_sse(headers)
        text = json.dumps(reply)
        cut = text.index(",") + 1
        parts = [b": keepalive\r\n", f"id: {msg.get('id')}\r\nevent: mess".encode(), b"age\r\n",
                 f"data: {text[:cut]}\r\n".encode(), f"data: {text[cut:]}\r\n".encode(), b"\r\n"]
        try:
            for p in parts:
                self.chunk(p)
                time.sleep(0.002)
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            pass


REFRESH_RACE = threading.Event()


def serve_tls(srv, out_dir):
    """A fresh CA (its certificate in out_dir/ca.pem) and a leaf for 127.0.0.1 it signed."""
    import datetime
    import ipaddress
    import os
    import ssl
    import tempfile
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "harness9 test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)
    with open(os.path.join(out_dir, "ca.pem"), "wb") as f:
        f.write(pem(ca))
    with tempfile.TemporaryDirectory() as tmp:
        chain, keyfile = os.path.join(tmp, "leaf.pem"), os.path.join(tmp, "key.pem")
        with open(chain, "wb") as f:
            f.write(pem(leaf))
        with open(keyfile, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(chain, keyfile)
    # The handshake runs in the request's thread (on its first read), not in accept().
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--barrier", type=int, default=0,
                    help="chunked: each tools/call reply waits until this many calls are in")
    ap.add_argument("--record")
    ap.add_argument("--other-port", type=int, default=0)
    ap.add_argument("--discover-delay", type=int, default=0,
                    help="stateless-only: server/discover is answered after this many ms")
    ap.add_argument("--token-ttl", type=int, default=3600)
    ap.add_argument("--set-cookie", default="",
                    help="every response carries Set-Cookie and Authentication-Info with this value")
    ap.add_argument("--challenge", default="Bearer", help="bearer: the 401's WWW-Authenticate")
    ap.add_argument("--refresh-race", action="store_true",
                    help="oauth: a refresh is answered only once a second refresh with the same token came in (that one fails 1 s later)")
    ap.add_argument("--tls", default="", help="serve HTTPS; the CA's certificate goes to DIR/ca.pem")
    ap.add_argument("--admin-tool", default="", help="oauth: calls of this tool need scope admin")
    ap.add_argument("--prm-url", default="", help="oauth: the challenge's resource_metadata (a path: on this server)")
    ap.add_argument("--as-url", default="", help="oauth: the metadata's authorization server")
    ap.add_argument("--token-redirect", default="", help="oauth: /token answers 307 to this URL")
    ap.add_argument("--drip", action="store_true", help="oauth: server metadata one byte per 2 s")
    ap.add_argument("--stateless", action="store_true",
                    help="oauth: past the token checks, a 2026-07-28-only server (as stateless-only)")
    ap.add_argument("--challenge-scope", default="mcp", help="oauth: the 401 challenge's scope")
    ap.add_argument("--admin-discover", action="store_true",
                    help="oauth: server/discover needs scope admin too (403 insufficient_scope)")
    ap.add_argument("--stepup-junk", action="store_true", help="oauth: each 403 names fresh scopes")
    ap.add_argument("--stepup-scope", action="append", default=[],
                    help="oauth: the k-th 403's scope (repeatable; the last one repeats)")
    ap.add_argument("--bad-token", default="", choices=["", "crlf", "esc"])
    ap.add_argument("--bad-token-on", default="login", choices=["login", "refresh"])
    ap.add_argument("--expires-in", type=int, default=None, help="oauth: expires_in told")
    ap.add_argument("--auth-endpoint", default="",
                    help="oauth: the authorization_endpoint its metadata names (any string)")
    ap.add_argument("--dpop", action="store_true", help="oauth: DPoP-bound tokens, proofs checked")
    ap.add_argument("--dpop-nonce", action="store_true", help="oauth --dpop: nonces required too")
    ap.add_argument("--rs-challenge-first-get", action="store_true",
                    help="oauth --dpop-nonce: the first GET stream is asked for a nonce once")
    ap.add_argument("--rs-nonce-every", type=int, default=1000,
                    help="oauth --dpop-nonce: the resource server's nonce changes after this many requests")
    ap.add_argument("--nonce-never", default="", choices=["", "as", "rs"],
                    help="oauth --dpop-nonce: that server asks for a nonce whatever the proof carries")
    ap.add_argument("--authorized-away", default="",
                    help="oauth: an authorized POST to /mcp answers 307 to this URL")
    ARGS = ap.parse_args()
    global BARRIER
    BARRIER = threading.Barrier(max(ARGS.barrier, 1))
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    ARGS.port = srv.server_address[1]
    srv.daemon_threads = True
    if ARGS.tls:
        serve_tls(srv, ARGS.tls)
    print(f"READY {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
