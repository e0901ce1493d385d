import AdAttributionKit
import Primitives
import SKAdNetwork

/// A postback copy of either protocol, as the app developer's endpoint receives it.
public enum Postback: Sendable, Equatable {
    case skadnetwork(SKAdNetworkPostback)
    case adattributionkit(AdAttributionKitPostback)

    /// Keys and words every postback repeats: the parser hands out shared copies instead of
    /// allocating them for each postback.
    static let parser = JSONParser(interning: [
        "version", "ad-network-id", "campaign-id", "source-identifier", "app-id", "transaction-id", "redownload",
        "source-app-id", "source-domain", "fidelity-type", "conversion-value", "coarse-conversion-value", "did-win",
        "postback-sequence-index", "attribution-signature", "country-code", "jws-string", "ad-interaction-type",
        "low", "medium", "high", "click", "view", "4.0", "3.0",
    ])

    /// The body as JSON, or the refusal of a body that is not.
    public static func parse(_ body: [UInt8]) -> Result<JSONValue, RequestProblem> {
        do {
            return .success(try parser.parse(body))
        } catch {
            return .failure(RequestProblem(.malformed, rule: "malformed_json", field: nil,
                                           detail: "the body is not JSON: \(error.description)"))
        }
    }

    /// Reads a body sent to `proto`'s path, parsed. The content type is not documented by Apple,
    /// so any body that parses as JSON is read, whatever its `Content-Type`. A refusal is for a
    /// body that cannot be a postback at all; everything else is kept, with what is wrong in
    /// `reasons`.
    public static func read(_ proto: AttributionProtocol, json: JSONValue) -> Result<Postback, RequestProblem> {
        switch proto {
        case .skadnetwork: return SKAdNetworkPostback.read(json).map(Postback.skadnetwork)
        case .adattributionkit: return AdAttributionKitPostback.read(json).map(Postback.adattributionkit)
        case .pcm, .appleAds:
            return .failure(RequestProblem(.malformed, rule: "not_a_postback", field: nil, detail: "\(proto.name) has no postbacks"))
        }
    }

    /// What names this postback across a device's retries.
    public var duplicateKey: String {
        switch self {
        case .skadnetwork(let p): p.duplicateKey
        case .adattributionkit(let p): p.duplicateKey
        }
    }

    /// The rules its fields break.
    public var reasons: [String] {
        switch self {
        case .skadnetwork(let p): p.reasons
        case .adattributionkit(let p): p.reasons
        }
    }

    /// The JWS `kid`, for AdAttributionKit.
    public var kid: String? {
        if case .adattributionkit(let p) = self { return p.kid }
        return nil
    }
}
