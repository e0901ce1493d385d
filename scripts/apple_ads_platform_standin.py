"""A stand-in for Apple's OAuth server, the Apple Ads Platform API 1.0 and the AdServices
attribution API, on 127.0.0.1, for scripts/apple_ads_platform_test.py and
benchmarks/apple_ads_names.py.

The client secret is checked here with Python's `cryptography` (OpenSSL), an implementation that
shares nothing with the endpoint's swift-crypto: ES256 over the JWT's signing input, the header's
`alg` and `kid`, and the claims Apple's page names (`iss` the team id, `sub` the client id, `aud`
https://appleid.apple.com, `iat`, `exp` under 180 days after it). The API checks the bearer token
and `X-AP-Context: adAccountId=…`, pages `POST /v1/*/query` answers by `offset` and `pageSize`,
and fails as an API fails when told to: a token revoked before it expires (401), 429 with
Retry-After, and 5xx in the middle of paging. docs/APPLE.md §3 has Apple's shapes.
"""
import base64
import http.server
import json
import sys
import threading
import time
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Quiet(http.server.ThreadingHTTPServer):
    """A client that closes its connection is no error of the stand-in's."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class StandIn:
    """`public_key`: the client's key as cryptography holds it. `campaigns`: [{id, name}];
    `ad_groups`: {campaign id: [{id, name}]}; `keywords`: {ad group id: [{id, text}]};
    `attributions`: {AdServices token: record dict}."""

    def __init__(self, public_key, client_id, team_id, key_id, account, campaigns, ad_groups, keywords, attributions=None,
                 max_page_size=1000):
        self.public_key, self.client_id, self.team_id, self.key_id, self.account = public_key, client_id, team_id, key_id, account
        self.campaigns, self.ad_groups, self.keywords = campaigns, ad_groups, keywords
        self.attributions = attributions or {}
        self.max_page_size = max_page_size
        self.expires_in = 3600           # the access tokens' life, in seconds
        self.lock = threading.Lock()
        self.tokens = {}            # access token -> expiry (time.time())
        self.issued = 0
        self.secrets_checked = 0
        self.refusals = []          # why a token or a call was refused: the test reads them
        self.calls = []             # (path, offset, page size, filters) of each API call answered 200
        self.requests = 0           # every request to the OAuth server and the API
        # Failure modes, each used once when set: the test arms them.
        self.revoke_after_calls = None   # revoke the token in use after this many more API calls
        self.too_many_once = None        # answer this path's next call 429 with Retry-After: `retry_after`
        self.retry_after = "1"
        self.fail_page_once = None       # (path, offset): answer that page 500 once
        self.server = Quiet(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def stop(self):
        self.server.shutdown()

    # What the client secret must be.
    def check_secret(self, secret):
        parts = secret.split(".")
        if len(parts) != 3:
            return "the client secret is not a compact JWS"
        header, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
        if header.get("alg") != "ES256":
            return "alg is %r, not ES256" % header.get("alg")
        if header.get("kid") != self.key_id:
            return "kid is %r" % header.get("kid")
        raw = b64url_decode(parts[2])
        if len(raw) != 64:
            return "the signature is %d bytes, not R||S (64)" % len(raw)
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        try:
            self.public_key.verify(der, (parts[0] + "." + parts[1]).encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return "the signature does not verify with the client's public key"
        now = time.time()
        if claims.get("iss") != self.team_id or claims.get("sub") != self.client_id:
            return "iss/sub are %r/%r" % (claims.get("iss"), claims.get("sub"))
        if claims.get("aud") != "https://appleid.apple.com":
            return "aud is %r" % claims.get("aud")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or iat > now + 300 or exp <= now or exp - iat > 180 * 86400:
            return "iat/exp are %r/%r" % (iat, exp)
        return None

    def _handler(standin):
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, body, headers=()):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with standin.lock:
                    standin.requests += 1
                path = urllib.parse.urlsplit(self.path).path
                if path == "/auth/oauth2/token":
                    return self.token(body)
                if path.startswith("/adservices"):
                    record = standin.attributions.get(body.decode())
                    return self.answer(200, record) if record else self.answer(404, {})
                if path.startswith("/v1/") and path.endswith("/query"):
                    return self.query(path[len("/v1/"):], body)
                self.answer(404, {"error": {"code": "NOT_FOUND", "message": path}})

            def token(self, body):
                form = urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
                field = lambda name: (form.get(name) or [""])[0]
                problem = None
                if self.headers.get("Content-Type") != "application/x-www-form-urlencoded":
                    problem = "Content-Type is %r" % self.headers.get("Content-Type")
                elif field("grant_type") != "client_credentials" or field("scope") != "searchadsorg":
                    problem = "grant_type/scope are %r/%r" % (field("grant_type"), field("scope"))
                elif field("client_id") != standin.client_id:
                    problem = "client_id is %r" % field("client_id")
                else:
                    problem = standin.check_secret(field("client_secret"))
                with standin.lock:
                    standin.secrets_checked += 1
                    if problem:
                        standin.refusals.append("token: " + problem)
                        return self.answer(401, {"error": "invalid_client"})
                    standin.issued += 1
                    token = "token-%d" % standin.issued
                    standin.tokens[token] = time.time() + standin.expires_in
                self.answer(200, {"access_token": token, "token_type": "Bearer", "expires_in": standin.expires_in, "scope": "searchadsorg"})

            def query(self, kind, body):
                with standin.lock:
                    bearer = (self.headers.get("Authorization") or "")[len("Bearer "):]
                    if standin.tokens.get(bearer, 0) < time.time():
                        standin.refusals.append("api: token %r not valid" % bearer)
                        return self.answer(401, {"error": {"code": "UNAUTHORIZED", "message": "The token is invalid or expired."}})
                    if self.headers.get("X-AP-Context") != "adAccountId=%s" % standin.account:
                        standin.refusals.append("api: X-AP-Context %r" % self.headers.get("X-AP-Context"))
                        return self.answer(403, {"error": {"code": "FORBIDDEN", "message": "no ad account"}})
                    request = json.loads(body or b"{}")
                    pagination = request.get("pagination", {})
                    offset, size = pagination.get("offset", 0), pagination.get("pageSize", 20)
                    filters = {f["field"]: f["value"] for f in request.get("filters", [])}
                    if standin.too_many_once == kind:
                        standin.too_many_once = None
                        return self.answer(429, {"error": {"code": "RATE_LIMIT_EXCEEDED", "message": "slow down"}},
                                           [("Retry-After", standin.retry_after), ("RateLimit-Remaining", "0")])
                    if standin.fail_page_once == (kind, offset):
                        standin.fail_page_once = None
                        return self.answer(500, {"error": {"code": "INTERNAL_SERVER_ERROR", "message": "try later"}})
                    if standin.revoke_after_calls is not None:
                        if standin.revoke_after_calls == 0:
                            standin.tokens.pop(bearer, None)
                            standin.revoke_after_calls = None
                            return self.answer(401, {"error": {"code": "UNAUTHORIZED", "message": "The token is invalid or expired."}})
                        standin.revoke_after_calls -= 1
                    if kind == "campaigns/query":
                        items = standin.campaigns
                    elif kind == "adgroups/query":
                        items = standin.ad_groups.get(int(filters.get("campaignId", "0")), [])
                    elif kind == "keywords/query":
                        items = standin.keywords.get(int(filters.get("adGroupId", "0")), [])
                    else:
                        return self.answer(404, {"error": {"code": "NOT_FOUND", "message": kind}})
                    size = min(size, standin.max_page_size)
                    standin.calls.append((kind, offset, size, filters))
                page = items[offset:offset + size]
                self.answer(200, {"result": page, "pagination": {"offset": offset, "pageSize": size, "totalCount": len(items)}},
                            [("RateLimit-Limit", "100"), ("RateLimit-Remaining", "99"), ("RateLimit-Reset", "1")])

        return Handler
