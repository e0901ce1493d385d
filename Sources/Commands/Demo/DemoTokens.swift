import Foundation
import Primitives
import RawHTTPClient
import Signatures

/// Safari's part of PCM fraud prevention, for the demo: at a click whose link carries
/// `attributionsourcenonce` (and at a conversion whose redirect carries
/// `attributionDestinationNonce`), fetch the site's key, blind a fresh token, have the site sign
/// it, and finalize the signature (RFC 9474: prepare, blind, finalize), against the live endpoint.
/// Then the forgers: a made-up token under a real site's name, a report sent again, and a token
/// from a publisher that runs its own endpoint, whose key this one does not know.
enum DemoTokens {
    /// Which tokens one attribution's reports carry.
    struct Plan {
        enum Kind {
            /// Signed by the live endpoint for the click's site (and the conversion's, if `destination`).
            case genuine
            /// Random bytes under the click site's name: what a forger without the key can send.
            case forged
            /// From a publisher this endpoint does not serve and has no key of.
            case unknownSite
        }
        var click: Int
        var kind: Kind
        var destination = false
    }

    struct Pair {
        var token: [UInt8]
        var signature: [UInt8]
    }

    static let keyPath = "/.well-known/private-click-measurement/get-token-public-key/"
    static let signPath = "/.well-known/private-click-measurement/sign-unlinkable-token/"

    /// A token signed by `site` through its two well-known paths, as Safari gets one.
    static func sign(site: String, side: String, port: UInt16) throws -> Pair {
        let keyAnswer = try httpRequest(port: port, method: "GET", path: keyPath, host: site, timeout: 300)
        guard keyAnswer.status == 200,
              let object = try? JSONSerialization.jsonObject(with: Data(keyAnswer.body)) as? [String: Any],
              let text = object["token_public_key"] as? String, let der = Base64.decode(text, urlSafe: true) else {
            throw RawHTTPError("\(site)'s token key answered \(keyAnswer.status): \(keyAnswer.bodyText)")
        }
        let key = try TokenPublicKey(subjectPublicKeyInfo: der)
        let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let nonce = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let blinding = try key.blind(token: token)
        let engagement = side == "source" ? #""source_engagement_type":"click","# : ""
        let body = #"{\#(engagement)"\#(side)_nonce":"\#(Base64URL.encode(nonce))","\#(side)_unlinkable_token":"\#(Base64URL.encode(blinding.blindedMessage))","version":3}"#
        let signed = try httpRequest(port: port, method: "POST", path: signPath, host: site,
                                     headers: [("Content-Type", "application/json")], body: Array(body.utf8), timeout: 300)
        guard signed.status == 200,
              let answer = try? JSONSerialization.jsonObject(with: Data(signed.body)) as? [String: Any],
              let blindText = answer["unlinkable_token"] as? String, let blindSignature = Base64.decode(blindText, urlSafe: true),
              let signature = blinding.finalize(blindSignature: blindSignature) else {
            throw RawHTTPError("\(site) signed a token with \(signed.status): \(signed.bodyText)")
        }
        return Pair(token: token, signature: signature)
    }

    /// 32 random bytes and 512 random bytes: a token and a "signature" nobody signed.
    static func madeUp() -> Pair {
        Pair(token: (0..<32).map { _ in UInt8.random(in: 0...255) }, signature: (0..<512).map { _ in UInt8.random(in: 0...255) })
    }

    /// `body` with the token fields appended, in WebKit's order (source pair, then destination).
    static func add(source: Pair?, destination: Pair?, to body: String) -> String {
        var fields = ""
        for (side, pair) in [("source", source), ("destination", destination)] {
            guard let pair else { continue }
            fields += #","\#(side)_secret_token":"\#(Base64URL.encode(pair.token))","\#(side)_secret_token_signature":"\#(Base64URL.encode(pair.signature))""#
        }
        return String(body.dropLast()) + fields + "}"
    }
}
