import DurableFiles
import Foundation
import Primitives
import RawHTTPClient

/// `attribution-endpoint rotate-token-key SITE [--at RFC3339] [--config FILE] [--port N] [--token T | --token-file FILE | --data DIR]`:
/// schedules a new PCM token key for SITE on the endpoint running on this machine, through its
/// admin API (`POST /api/token-keys`), so that the running endpoint makes, keeps and serves it.
/// The token comes from `--token`, `ATTRIBUTION_ENDPOINT_TOKEN`, `--token-file` (or the config
/// file's `token_file`), or DIR/admin-token; the port and the data directory from the flags or
/// the config file the endpoint runs with.
public enum RotateTokenKeyCommand {
    static let usage = """
        usage: attribution-endpoint rotate-token-key SITE [--at RFC3339] [--config FILE] [--port N] [--token T | --token-file FILE | --data DIR]

        Schedules a new token key for SITE on the endpoint listening on 127.0.0.1:PORT (default
        8080), served from --at on (default now). Browsers drop every report still in flight for
        the old key, up to 7 days + 48 h of them: rotate when the key may have leaked, at a quiet
        time. The old key stays to verify what it signed. See docs/DEPLOYMENT.md.
        """ + EndpointConfiguration.sharedOptionsHelp(["--config", "--port", "--token", "--token-file", "--data"])

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        var site: String?, at: String?, givenPort: UInt16?, config: String?, tokenFile: String?, data: String?
        var token = environment[EndpointConfiguration.environmentTokenName]
        var i = 0
        func value() -> String? { i += 1; return i < arguments.count ? arguments[i] : nil }
        while i < arguments.count {
            switch arguments[i] {
            case "--help", "-h": print(usage); return 0
            case "--at": at = value()
            case "--port":
                guard let text = value(), let p = UInt16(text) else { return fail("--port needs a number") }
                givenPort = p
            case "--token": token = value()
            case "--token-file": tokenFile = value()
            case "--config": config = value()
            case "--data": data = value()
            case let word where !word.hasPrefix("-") && site == nil: site = word
            default: return fail("unknown argument '\(arguments[i])'")
            }
            i += 1
        }
        guard let site else { return fail("name the site whose key to rotate") }
        var configuration = EndpointConfiguration()
        configuration.port = 8080
        if let config {
            do { try configuration.apply(configFile: config) } catch { return fail("\(error)") }
        }
        let port = givenPort ?? configuration.port
        tokenFile = tokenFile ?? configuration.adminTokenFile
        if token == nil, let tokenFile {
            do throws(PrivateFileError) {
                token = try PrivateFiles.readSecret(tokenFile, what: "the token file").trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                return fail("--token-file: \(error.description)")
            }
        }
        if token == nil, let text = try? String(contentsOfFile: (data ?? configuration.dataDirectory) + "/" + AdminToken.fileName, encoding: .utf8) {
            token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let token, !token.isEmpty else {
            return fail("no admin token: pass --token or --token-file, set \(EndpointConfiguration.environmentTokenName), or name the data directory (--data DIR, or --config FILE)")
        }
        var body = "{\"site\":"
        JSONValue.writeString(site, to: &body)
        if let at {
            body += ",\"serves_from\":"
            JSONValue.writeString(at, to: &body)
        }
        body += "}"
        do {
            let response = try httpRequest(port: port, method: "POST", path: TokenKeyRoutes.path, host: "localhost",
                                           headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                           body: Array(body.utf8), timeout: 300)  // making the key takes seconds
            print(response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines))
            return response.status == 201 ? 0 : 1
        } catch {
            return fail("the endpoint on port \(port) did not answer: \(error)")
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attribution-endpoint rotate-token-key: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
