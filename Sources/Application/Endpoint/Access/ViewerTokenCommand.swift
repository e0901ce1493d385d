import Foundation
import Marketers
import Primitives

/// `attribution-endpoint viewer-token add|list|revoke`: read-only tokens for the page, the
/// summaries and the exports, made and revoked in the data directory while the endpoint runs (it
/// sees the change at the next request). The token is printed once and kept only as its SHA-256.
public enum ViewerTokenCommand {
    static let usage = """
        usage: attribution-endpoint viewer-token add --label TEXT [--advertiser ID] [--data DIR | --viewer-tokens FILE] [--config FILE]
               attribution-endpoint viewer-token list [--data DIR | --viewer-tokens FILE] [--config FILE]
               attribution-endpoint viewer-token revoke ID [--data DIR | --viewer-tokens FILE] [--config FILE]

        add     makes a token that can only read: the page, the summaries and the exports. With
                --advertiser it reads that advertiser's sites alone (POST /api/advertisers, or
                "advertisers" in the config file). Prints the token once; the endpoint keeps
                only its SHA-256, in DIR/viewer-tokens.json or FILE (mode 0600). A cluster's
                tokens are in one file every node is given (--viewer-tokens).
        list    prints each token's id, advertiser (or "all"), creation time and label.
        revoke  removes the token with that id; the endpoint refuses it from its next request.
        """ + EndpointConfiguration.sharedOptionsHelp(["--data", "--viewer-tokens", "--config"])

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        guard let verb = arguments.first, ["add", "list", "revoke"].contains(verb) else {
            print(usage)
            return arguments.first == "--help" || arguments.first == "-h" ? 0 : 2
        }
        var label: String?, advertiser: String?, data: String?, config: String?, id: String?, file: String?
        var i = 1
        func value() -> String? { i += 1; return i < arguments.count ? arguments[i] : nil }
        while i < arguments.count {
            switch arguments[i] {
            case "--label": label = value()
            case "--advertiser": advertiser = value()
            case "--data", "--data-dir": data = value()
            case "--config": config = value()
            case "--viewer-tokens": file = value()
            case "--help", "-h": print(usage); return 0
            case let word where !word.hasPrefix("-") && id == nil && verb == "revoke": id = word
            default: return fail("unknown argument '\(arguments[i])' (see viewer-token --help)")
            }
            i += 1
        }
        var directory = data ?? "./data"
        var configured: [String] = []
        if let config {
            var configuration = EndpointConfiguration()
            do { try configuration.apply(configFile: config) } catch { return fail("\(error)") }
            if data == nil { directory = configuration.dataDirectory }
            if file == nil { file = configuration.viewerTokens }
            // The endpoint adds the file's advertisers at its next start.
            configured = configuration.advertisers.map(\.id)
        }
        let book = file.map { ViewerTokenStore(path: $0) } ?? ViewerTokenStore(dataDirectory: directory)
        do {
            switch verb {
            case "add":
                guard let label else { return fail("say whom the token is for with --label TEXT") }
                if let advertiser {
                    let registry = try AdvertiserRegistryStore(dataDirectory: directory, siteRules: SiteRules(developmentMode: true)).registry
                    guard registry.advertiser(id: advertiser) != nil || configured.contains(advertiser) else {
                        return fail("no advertiser \(advertiser) in \(directory)/advertisers.json or the --config file; register it first (POST /api/advertisers, or \"advertisers\" in the config file)")
                    }
                }
                let folder = file.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path } ?? directory
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                let (record, token) = try book.create(label: label, advertiser: advertiser, now: EndpointClock.systemNow())
                FileHandle.standardError.write(Data("made viewer token \(record.id) for \(record.advertiser ?? "every advertiser"); it is shown once:\n".utf8))
                print(token)
            case "list":
                for token in book.list.tokens {
                    print("\(token.id) \(token.advertiser ?? "all") \(token.createdAt) \(token.label)")
                }
            default:
                guard let id else { return fail("name the token's id (viewer-token list shows them)") }
                guard try book.revoke(id: id) else { return fail("no viewer token with id \(id)") }
                print("revoked \(id)")
            }
            return 0
        } catch let problem as RequestProblem {
            return fail(problem.detail)
        } catch {
            return fail("\(error)")
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attribution-endpoint viewer-token: \(message)\n".utf8))
        return 2
    }
}
