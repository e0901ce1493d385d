import Foundation
import Primitives

/// `attribution-endpoint token-keys add SITE --file FILE [--serves-from RFC3339] [--dev]` and
/// `attribution-endpoint token-keys list --file FILE`: the PCM token keys of a cluster, made once
/// into one file that every node is given with `--token-keys FILE`. Every node then serves the
/// same key bytes (WebKit compares the key id of the key it fetched with the one that signed),
/// and a successor added with a `--serves-from` in the future takes over on every node at the
/// same instant, once each has been given the new file and reloaded.
public enum TokenKeysCommand {
    static let usage = """
        usage: attribution-endpoint token-keys add SITE --file FILE [--serves-from RFC3339] [--dev]
               attribution-endpoint token-keys list --file FILE

        add   makes an RSA-4096 key for SITE and adds it to FILE (created 0600 if missing). SITE's
              first key serves at once; a later one is a rotation, served from --serves-from on
              (default now): browsers drop the reports still in flight for the old key, up to
              7 days + 48 h of them. Copy FILE to every node and reload each (systemctl
              reload attribution-endpoint) before that time.
        list  prints each key: site, key id, serves_from. Equal output on every node means
              equal keys.
        """ + EndpointConfiguration.sharedOptionsHelp(["--dev"])

    public static func main(arguments: [String]) -> Int32 {
        guard let verb = arguments.first, verb == "add" || verb == "list" else { print(usage); return arguments.first == "--help" ? 0 : 2 }
        var site: String?, file: String?, servesFrom: String?, dev = false
        var i = 1
        func value() -> String? { i += 1; return i < arguments.count ? arguments[i] : nil }
        while i < arguments.count {
            switch arguments[i] {
            case "--file": file = value()
            case "--serves-from": servesFrom = value()
            case "--dev": dev = true
            case "--help", "-h": print(usage); return 0
            case let word where !word.hasPrefix("-") && site == nil && verb == "add": site = word
            default: return fail("unknown argument '\(arguments[i])'")
            }
            i += 1
        }
        guard let file else { return fail("name the key file with --file FILE") }
        do {
            let book = try TokenKeyStore(path: file, servedSites: [], foreignKeys: [:], clock: { EndpointClock.systemNow() })
            if verb == "add" {
                guard let site else { return fail("name the site whose key to add") }
                if let problem = SiteRules(developmentMode: dev).check(site) { return fail("\(site): \(problem.detail)") }
                let now = EndpointClock.systemNow()
                var at = now
                if let servesFrom {
                    guard let time = Timestamp(rfc3339: servesFrom) else { return fail("--serves-from must be an RFC 3339 time") }
                    at = time
                }
                let key = try book.schedule(site: site, servesFrom: at)
                print("added \(site) \(key.keyID) serves_from \(key.servesFrom.rfc3339)")
            } else {
                for key in book.all.sorted(by: { ($0.site, $0.servesFrom) < ($1.site, $1.servesFrom) }) {
                    print("\(key.site) \(key.keyID) serves_from \(key.servesFrom.rfc3339)")
                }
            }
            return 0
        } catch {
            return fail("\(error)")
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attribution-endpoint token-keys: \(message)\n".utf8))
        return 2
    }
}
