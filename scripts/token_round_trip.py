#!/usr/bin/env python3
"""PCM fraud prevention end to end, with a client that shares nothing with the endpoint.

Plays Safari's part of RFC 9474 (RSABSSA-SHA384-PSS-Deterministic) by hand, over real HTTP,
against the endpoint binary, for the source site and for the destination site:
1. fetch the site's key from get-token-public-key/ and check its SubjectPublicKeyInfo (the
   RSASSA-PSS OID and parameters WebKit expects) and its key id against /metrics;
2. blind a random token (EMSA-PSS with SHA-384, MGF1-SHA-384, a 48-byte salt; then m·r^e mod n)
   and ask sign-unlinkable-token/ to sign it;
3. finalize (s = z·r⁻¹ mod n) and verify the signature with Python's `cryptography` (OpenSSL);
4. send the report carrying the token pair, which must come back `…_token_verified`.
Usage: scripts/token_round_trip.py BINARY
"""
import base64
import hashlib
import http.client
import json
import os
import secrets
import sys
import tempfile

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from endpoint_process import Endpoint  # noqa: E402

PCM = "/.well-known/private-click-measurement/"
# AlgorithmIdentifier of id-RSASSA-PSS with SHA-384, MGF1-SHA-384, salt 48: PROTOCOLS.md §2.
PSS_ALGORITHM = bytes.fromhex("303d06092a864886f70d01010a3030a00d300b0609608648016503040202a11a301806092a864886f70d010108"
                              "300b0609608648016503040202a203020130")


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def der(data, offset, tag):
    """(content start, content end) of the DER element with `tag` at `offset`."""
    assert data[offset] == tag, "tag %02x at %d, expected %02x" % (data[offset], offset, tag)
    length, i = data[offset + 1], offset + 2
    if length & 0x80:
        count, length = length & 0x7F, 0
        for _ in range(count):
            length, i = length << 8 | data[i], i + 1
    return i, i + length


def read_key(spki):
    start, end = der(spki, 0, 0x30)
    assert end == len(spki)
    assert spki[start:start + len(PSS_ALGORITHM)] == PSS_ALGORITHM, "not the RSASSA-PSS algorithm WebKit expects"
    bits_start, bits_end = der(spki, start + len(PSS_ALGORITHM), 0x03)
    assert spki[bits_start] == 0
    seq_start, _ = der(spki, bits_start + 1, 0x30)
    n_start, n_end = der(spki, seq_start, 0x02)
    e_start, e_end = der(spki, n_end, 0x02)
    return int.from_bytes(spki[n_start:n_end], "big"), int.from_bytes(spki[e_start:e_end], "big")


def mgf1(seed, length):
    out, counter = b"", 0
    while len(out) < length:
        out += hashlib.sha384(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def emsa_pss_encode(message, em_bits, salt_length=48):
    h_len, em_len = 48, (em_bits + 7) // 8
    m_hash = hashlib.sha384(message).digest()
    salt = secrets.token_bytes(salt_length)
    h = hashlib.sha384(b"\0" * 8 + m_hash + salt).digest()
    db = b"\0" * (em_len - salt_length - h_len - 2) + b"\1" + salt
    masked = bytearray(a ^ b for a, b in zip(db, mgf1(h, em_len - h_len - 1)))
    masked[0] &= 0xFF >> (8 * em_len - em_bits)
    return bytes(masked) + h + b"\xbc"


class Client:
    def __init__(self, port):
        self.port = port

    def request(self, method, path, host, body=None, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        all_headers = {"Host": host, **(headers or {})}
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        connection.request(method, path, body=body, headers=all_headers)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, dict(response.getheaders()), data


def round_trip(client, side, host, failures):
    status, headers, data = client.request("GET", PCM + "get-token-public-key/", host)
    if status != 200 or headers.get("Content-Type") != "application/json" or "Set-Cookie" in headers:
        return failures.append("%s: key answered %d %s" % (side, status, headers))
    spki = unb64url(json.loads(data)["token_public_key"])
    n, e = read_key(spki)
    if n.bit_length() != 4096 or e != 65537:
        return failures.append("%s: a %d-bit key with e=%d" % (side, n.bit_length(), e))
    key_id = b64url(hashlib.sha256(spki).digest())
    _, _, metrics = client.request("GET", "/metrics", "localhost", headers={"Authorization": "Bearer t"})
    if ('site="%s",key_id="%s",state="served"' % (host, key_id)) not in metrics.decode():
        failures.append("%s: key id %s is not in /metrics as served" % (side, key_id))

    token = secrets.token_bytes(32)
    m = int.from_bytes(emsa_pss_encode(token, n.bit_length() - 1), "big")
    while True:
        r = secrets.randbelow(n - 2) + 2
        try:
            r_inverse = pow(r, -1, n)
            break
        except ValueError:
            continue
    blinded = (m * pow(r, e, n)) % n
    body = {"%s_nonce" % side: b64url(secrets.token_bytes(16)),
            "%s_unlinkable_token" % side: b64url(blinded.to_bytes(512, "big")), "version": 3}
    if side == "source":
        body["source_engagement_type"] = "click"
    status, headers, data = client.request("POST", PCM + "sign-unlinkable-token/", host, json.dumps(body))
    if status != 200:
        return failures.append("%s: signing answered %d %s" % (side, status, data[:200]))
    blind_signature = int.from_bytes(unb64url(json.loads(data)["unlinkable_token"]), "big")
    signature = ((blind_signature * r_inverse) % n).to_bytes(512, "big")

    public_key = rsa.RSAPublicNumbers(e, n).public_key()
    try:
        public_key.verify(signature, token, padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48), hashes.SHA384())
    except Exception as error:  # noqa: BLE001 - any failure to verify is the test failing
        return failures.append("%s: the finalized signature does not verify with cryptography: %r" % (side, error))

    report = ('{"source_engagement_type":"click","source_site":"news.example","source_id":42,'
              '"attributed_on_site":"shop.example","trigger_data":5,"version":3,'
              '"%s_secret_token":"%s","%s_secret_token_signature":"%s"}' % (side, b64url(token), side, b64url(signature)))
    for report_host in ("news.example", "shop.example"):
        status, _, data = client.request("POST", PCM + "report-attribution/", report_host, report)
        reasons = json.loads(data).get("reasons", []) if status == 201 else []
        if "%s_token_verified" % side not in reasons:
            failures.append("%s: the report to %s came back %d %s" % (side, report_host, status, data[:300]))
    print("%s (%s): key %s…, token signed, finalized, verified by OpenSSL and by the endpoint" % (side, host, key_id[:12]))


def main():
    binary = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as data:
        endpoint = Endpoint(binary, data, "t")
        try:
            client = Client(endpoint.port)
            failed_sides = 0
            for side, host in (("source", "news.example"), ("destination", "shop.example")):
                before = len(failures)
                round_trip(client, side, host, failures)
                failed_sides += len(failures) > before
        finally:
            endpoint.stop()
    for failure in failures:
        print("FAIL:", failure)
    print("%d passed, %d failed" % (2 - failed_sides, failed_sides))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
