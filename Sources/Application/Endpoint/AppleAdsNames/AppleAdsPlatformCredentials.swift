import Foundation
import Primitives
import Signatures

/// What `--apple-ads-platform FILE` names: the Apple Ads Platform API's client, in a JSON file the
/// operator keeps 0600, the private key in a PEM file of its own. Never on the command line.
///
/// `{"client_id":"SEARCHADS.…","team_id":"SEARCHADS.…","key_id":"…","ad_account_id":"…",
///   "private_key_file":"/etc/attribution-endpoint/apple-ads.pem"}`
struct AppleAdsPlatformCredentials: Sendable {
    let clientID: String
    let teamID: String
    let keyID: String
    let adAccountID: String
    let key: P256PrivateKey

    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    static func load(file: String) throws(Unreadable) -> AppleAdsPlatformCredentials {
        guard let data = FileManager.default.contents(atPath: file) else { throw Unreadable(description: "cannot read \(file)") }
        guard case .object(let members)? = try? JSONParser().parse([UInt8](data)) else {
            throw Unreadable(description: "\(file) is not a JSON object")
        }
        func text(_ key: String) throws(Unreadable) -> String {
            guard case .string(let value)? = members.first(where: { $0.key == key })?.value, !value.isEmpty, value.utf8.count <= 512,
                  !value.contains(where: { $0.isNewline }) else {
                throw Unreadable(description: "\(file): \(key) is missing or not a one-line string")
            }
            return value
        }
        for member in members where !["client_id", "team_id", "key_id", "ad_account_id", "private_key_file"].contains(member.key) {
            throw Unreadable(description: "\(file): unknown key \(member.key)")
        }
        let keyFile = try text("private_key_file")
        guard let pem = FileManager.default.contents(atPath: keyFile) else { throw Unreadable(description: "cannot read the private key \(keyFile)") }
        let key: P256PrivateKey
        do { key = try P256PrivateKey(pemRepresentation: String(decoding: pem, as: UTF8.self)) } catch {
            throw Unreadable(description: "\(keyFile): \(error)")
        }
        let account = try text("ad_account_id")
        guard account.allSatisfy(\.isNumber) else { throw Unreadable(description: "\(file): ad_account_id must be digits") }
        return AppleAdsPlatformCredentials(clientID: try text("client_id"), teamID: try text("team_id"), keyID: try text("key_id"),
                                           adAccountID: account, key: key)
    }
}
