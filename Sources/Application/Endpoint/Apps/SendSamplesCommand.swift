import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `attribution-endpoint send-samples URL [--host HOST]`: Apple's published sample postbacks
/// (`ApplesSamplePostbacks`) sent to a running endpoint, as devices send them, so that a developer
/// sees the whole path work before any device is involved. To an app's development URL
/// (`/development-postbacks/…/`) every sample goes as it is; to any other URL each goes to its
/// protocol's well-known path there, and is stored as a production postback.
public enum SendSamplesCommand {
    static let usage = """
        usage: attribution-endpoint send-samples URL [--host HOST]

        Sends Apple's sample postbacks (SKAdNetwork 2.2 to 4.0, signed by Apple, and the
        AdAttributionKit postback of Settings › Developer, signed with
        apple-development-identifier/1) to URL: an app's development URL (POST
        /api/apps/development-path?app_id=… makes one), or a site's base URL, where they go to
        /.well-known/skadnetwork/report-attribution/ and /.well-known/appattribution/report-attribution/.
        --host sends that Host header, for a URL that names an address.
        Exit status: 0 every sample taken (2xx), 1 one was not, 64 usage.
        """

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        var target: String?, host: String?
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case "--help", "-h": print(usage); return 0
            case "--host":
                i += 1
                guard i < arguments.count else { return fail("--host needs a host") }
                host = arguments[i]
            case let word where !word.hasPrefix("-") && target == nil: target = word
            default: return fail("unknown argument '\(arguments[i])'")
            }
            i += 1
        }
        guard let target, let base = URL(string: target), ["http", "https"].contains(base.scheme ?? ""), base.host != nil else {
            return fail("name the URL to send to: an app's development URL, or a site's https://… base")
        }
        let development = base.path.contains("/development-postbacks/")
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        var failed = 0
        for sample in ApplesSamplePostbacks.all {
            var url = base
            if !development {
                url = base.appendingPathComponent(sample.proto == .skadnetwork ? ".well-known/skadnetwork/report-attribution/"
                                                                              : ".well-known/appattribution/report-attribution/")
            }
            var request = URLRequest(url: url, timeoutInterval: 30)
            request.httpMethod = "POST"
            request.httpBody = Data(sample.body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if let host { request.setValue(host, forHTTPHeaderField: "Host") }
            let (status, body) = send(request, session: session)
            if !(200...299).contains(status) { failed += 1 }
            print("\(sample.name) (\(sample.proto.name)): \(status == 0 ? "no answer" : String(status)) \(body)")
        }
        return failed == 0 ? 0 : 1
    }

    private static func send(_ request: URLRequest, session: URLSession) -> (Int, String) {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result = (0, "")
        session.dataTask(with: request) { data, response, error in
            let text = data.map { String(decoding: $0.prefix(300), as: UTF8.self) } ?? error.map { "\($0.localizedDescription)" } ?? ""
            result = ((response as? HTTPURLResponse)?.statusCode ?? 0, text)
            done.signal()
        }.resume()
        done.wait()
        return result
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attribution-endpoint send-samples: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
