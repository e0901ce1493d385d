import Foundation
import Testing

/// The vector files of `Resources/vectors` (sources in `SOURCES.md`).
enum VectorFiles {
    static func json(_ name: String) throws -> [String: Any] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "vectors"))
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    /// Apple's SKAdNetwork examples: name → (body bytes, whether the signature must hold).
    static func appleSKAdNetwork() throws -> [(name: String, body: [UInt8], valid: Bool)] {
        try json("skadnetwork_postbacks").sorted { $0.key < $1.key }.map { name, value in
            let entry = value as! [String: Any]
            let body = try JSONSerialization.data(withJSONObject: entry["postback"]!)
            return (name, Array(body), entry["expect_valid"] as! Bool)
        }
    }

    static func appleAdAttributionKit() throws -> [(name: String, body: [UInt8], valid: Bool)] {
        try json("adattributionkit_postbacks").sorted { $0.key < $1.key }.map { name, value in
            let entry = value as! [String: Any]
            let body = try JSONSerialization.data(withJSONObject: entry["body"]!)
            return (name, Array(body), entry["expect_valid"] as! Bool)
        }
    }

    struct Generated {
        var keyName: String
        var keySPKI: String
        var vectors: [(name: String, protocol: String, body: [UInt8], signature: String, reasons: [String])]
    }

    static func generated() throws -> Generated {
        let document = try json("generated_postbacks")
        let vectors = (document["vectors"] as! [[String: Any]]).map {
            ($0["name"] as! String, $0["protocol"] as! String, Array(($0["body"] as! String).utf8), $0["signature"] as! String,
             $0["reasons"] as! [String])
        }
        return Generated(keyName: document["test_key_name"] as! String, keySPKI: document["test_key_spki"] as! String, vectors: vectors)
    }
}
