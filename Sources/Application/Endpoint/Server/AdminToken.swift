import Foundation
import HTTPServer
import Primitives

/// The bearer token that guards the export and the other `/api` paths.
enum AdminToken {
    static let fileName = "admin-token"

    /// The configured token, or the one kept in the data directory, made on first start.
    /// Returns the token and, when it lives in a file, that file's path.
    static func resolve(configured: String?, dataDirectory: String) throws -> (token: String, file: String?) {
        if let configured {
            retireMadeToken(dataDirectory: dataDirectory)
            return (configured, nil)
        }
        let path = dataDirectory + "/" + fileName
        if let data = FileManager.default.contents(atPath: path),
           let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty {
            return (text, path)
        }
        var generator = SystemRandomNumberGenerator()
        let token = Hex.text((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        // Created with 0600 from the start, never readable by others even for a moment.
        guard FileManager.default.createFile(atPath: path, contents: Data((token + "\n").utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw EndpointConfiguration.ParseError(description: "cannot write \(path)")
        }
        return (token, path)
    }

    /// A token given now (the token file, the environment, the command line) replaces the one the
    /// node made in the data directory: that file goes, so that nothing (`rotate-token-key --data`,
    /// an operator reading it) takes a token that no longer opens anything.
    static func retireMadeToken(dataDirectory: String) {
        let path = dataDirectory + "/" + fileName
        guard FileManager.default.fileExists(atPath: path) else { return }
        if unlink(path) == 0 {
            EventLog.write("admin_token_file_removed", ["file": .string(path), "reason": .string("a token is given: the token file, the environment or --token")])
        }
    }

    /// The route groups' gate for everything that needs the token: 401 without it.
    static func gate(_ token: String) -> RouteGroup.Gate {
        { request in if !matches(request.headers["Authorization"], token: token) { throw Problem.unauthorized } }
    }

    /// The token an `Authorization: Bearer …` header presents.
    static func bearer(_ header: String?) -> String? {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        return String(header.dropFirst(7))
    }

    /// Compares in time independent of where the strings differ.
    static func matches(_ header: String?, token: String) -> Bool {
        guard let presented = bearer(header) else { return false }
        let given = Array(presented.utf8)
        let expected = Array(token.utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for i in 0..<expected.count { difference |= expected[i] ^ (i < given.count ? given[i] : 0) }
        return difference == 0
    }
}
