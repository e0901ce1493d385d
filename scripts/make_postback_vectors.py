#!/usr/bin/env python3
"""Writes Tests/PostbackTests/Resources/vectors/generated_postbacks.json: postbacks signed by a
second, independent implementation (Python's `cryptography`, OpenSSL underneath), so that the
endpoint's message building and verification are checked against code that shares none of it.

The signed message is built here from PROTOCOLS.md §3's table, not from the Swift code. Every
SKAdNetwork version appears with each optional field present and absent; AdAttributionKit JWSs
are made with ES256 by hand (RFC 7515). Each vector says what the endpoint must find:
`test_key` when the key is trusted with --postback-key, `invalid` for a tampered one,
`unverifiable` for 1.0 and 2.0 (signed here with P-192 as Apple did).

Usage: python3 scripts/make_postback_vectors.py   (pip install cryptography)
"""
import base64, itertools, json, os, uuid
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

OUT = os.path.join(os.path.dirname(__file__), "..", "Tests", "PostbackTests", "Resources", "vectors", "generated_postbacks.json")
SEP = "\u2063"
SIGNED = {  # PROTOCOLS.md §3; a list is "the first of these present, if any"
    "4.0": ["version", "ad-network-id", "source-identifier", "app-id", "transaction-id", "redownload",
            ["source-app-id", "source-domain"], "fidelity-type", "did-win", "postback-sequence-index"],
    "3.0": ["version", "ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", ["source-app-id"],
            "fidelity-type", "did-win"],
    "2.2": ["version", "ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", ["source-app-id"],
            "fidelity-type"],
    "2.1": ["version", "ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", ["source-app-id"]],
    "2.0": ["version", "ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", ["source-app-id"]],
    "1.0": ["ad-network-id", "campaign-id", "app-id", "transaction-id"],
}


def text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def message(postback):
    version = postback.get("version", "1.0")
    values = []
    for field in SIGNED[version]:
        if isinstance(field, list):
            present = [f for f in field if f in postback]
            if present:
                values.append(text(postback[present[0]]))
        else:
            values.append(text(postback[field]))
    return SEP.join(values).encode()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def spki(key):
    return base64.b64encode(key.public_key().public_bytes(serialization.Encoding.DER,
                                                           serialization.PublicFormat.SubjectPublicKeyInfo)).decode()


def skadnetwork_vectors(key, key192):
    out = []
    n = 0
    for version in ["1.0", "2.0", "2.1", "2.2", "3.0", "4.0"]:
        # Every combination of the optional fields the version has.
        optional = {
            "1.0": [],
            "2.0": ["source-app-id", "conversion-value"], "2.1": ["source-app-id", "conversion-value"],
            "2.2": ["source-app-id", "conversion-value"], "3.0": ["source-app-id", "conversion-value"],
            "4.0": ["source", "value", "country-code"],
        }[version]
        for present in itertools.product([False, True], repeat=len(optional)):
            n += 1
            p = {} if version == "1.0" else {"version": version}
            p["ad-network-id"] = "generated%d.skadnetwork" % n
            if version == "4.0":
                p["source-identifier"] = ["12", "345", "6789"][n % 3]
            else:
                p["campaign-id"] = 1 + n % 100
            p["app-id"] = 1000000000 + n
            p["transaction-id"] = str(uuid.UUID(int=n))
            if version != "1.0":
                p["redownload"] = n % 2 == 0
            flags = dict(zip(optional, present))
            if flags.get("source-app-id"):
                p["source-app-id"] = 2000000000 + n
            if version in ("2.2", "3.0", "4.0"):
                p["fidelity-type"] = n % 2
            if version in ("3.0", "4.0"):
                p["did-win"] = True
            if version == "4.0":
                p["postback-sequence-index"] = 0
                if flags.get("source"):
                    if n % 2:
                        p["source-app-id"] = 2000000000 + n
                    else:
                        p["source-domain"] = "publisher%d.example" % n
                if flags.get("value"):
                    p["conversion-value"] = n % 64
                else:
                    p["coarse-conversion-value"] = ["low", "medium", "high"][n % 3]
                if flags.get("country-code"):
                    p["country-code"] = "DE"
            elif flags.get("conversion-value"):
                p["conversion-value"] = n % 64
            signer = key192 if version in ("1.0", "2.0") else key
            p["attribution-signature"] = base64.b64encode(signer.sign(message(p), ec.ECDSA(hashes.SHA256()))).decode()
            expected = "unverifiable" if version in ("1.0", "2.0") else "test_key"
            out.append({"name": "skadnetwork_%s_%d" % (version, n), "protocol": "skadnetwork",
                        "body": json.dumps(p, separators=(",", ":")), "signature": expected, "reasons": []})
            if expected == "test_key":
                # A signed field changed after signing: the signature no longer holds.
                t = dict(p)
                t["app-id"] = p["app-id"] + 1
                t["transaction-id"] = str(uuid.UUID(int=n + 100000))
                out.append({"name": "skadnetwork_%s_%d_tampered" % (version, n), "protocol": "skadnetwork",
                            "body": json.dumps(t, separators=(",", ":")), "signature": "invalid",
                            "reasons": ["signature_invalid"]})
    return out


def jws(key, kid, payload):
    header = b64url(json.dumps({"kid": kid, "alg": "ES256"}, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    r, s = decode_dss_signature(key.sign(("%s.%s" % (header, body)).encode(), ec.ECDSA(hashes.SHA256())))
    return "%s.%s.%s" % (header, body, b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")))


def adattributionkit_vectors(key):
    out = []
    n = 0
    for conversion_type, index, marketplace, value in itertools.product(
            ["download", "redownload", "re-engagement"], [0, 1, 2], [False, True], ["fine", "coarse", "none"]):
        n += 1
        if index > 0 and value == "fine":
            continue  # later postbacks carry the coarse value only
        payload = {"impression-type": "app-impression", "ad-network-identifier": "generated.adattributionkit",
                   "source-identifier": ["12", "345", "6789"][n % 3], "advertised-item-identifier": 1000000000 + n,
                   "conversion-type": conversion_type, "postback-identifier": str(uuid.UUID(int=500000 + n)).upper(),
                   "did-win": n % 4 != 0, "postback-sequence-index": index}
        if marketplace:
            payload["marketplace-identifier"] = "com.apple.AppStore"
            payload["publisher-item-identifier"] = 3000000000 + n
        body = {"jws-string": jws(key, "generated-test-key", payload), "ad-interaction-type": "click"}
        if value == "fine":
            body["conversion-value"] = n % 64
        elif value == "coarse":
            body["coarse-conversion-value"] = ["low", "medium", "high"][n % 3]
        if n % 2:
            body["country-code"] = "FR"
        out.append({"name": "adattributionkit_%d" % n, "protocol": "adattributionkit",
                    "body": json.dumps(body, separators=(",", ":")), "signature": "test_key", "reasons": []})
        if n % 5 == 0:
            # The payload changed after signing (one more install claimed for another app).
            header, payload_segment, signature = body["jws-string"].split(".")
            forged = dict(payload, **{"advertised-item-identifier": 1, "postback-identifier": str(uuid.UUID(int=700000 + n))})
            t = dict(body, **{"jws-string": "%s.%s.%s" % (header, b64url(json.dumps(forged, separators=(",", ":")).encode()), signature)})
            out.append({"name": "adattributionkit_%d_tampered" % n, "protocol": "adattributionkit",
                        "body": json.dumps(t, separators=(",", ":")), "signature": "invalid",
                        "reasons": ["signature_invalid"]})
    return out


def main():
    key = ec.generate_private_key(ec.SECP256R1())
    key192 = ec.generate_private_key(ec.SECP192R1())
    vectors = skadnetwork_vectors(key, key192) + adattributionkit_vectors(key)
    document = {
        "source": "scripts/make_postback_vectors.py (Python cryptography %s), a second implementation" % __import__("cryptography").__version__,
        "test_key_name": "generated-test-key",
        "test_key_spki": spki(key),
        "vectors": vectors,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")
    print("%d vectors written to %s" % (len(vectors), os.path.normpath(OUT)))


if __name__ == "__main__":
    main()
