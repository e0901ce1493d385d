import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Calls Apple's attribution API (`https://api-adservices.apple.com/api/v1/`, or `--apple-ads-api`)
/// with Foundation's URLSession: the token as the body, `text/plain`. No cookie, no cache, and
/// nothing about the device but the token.
final class AppleAdsClient: Sendable {
    static let defaultURL = "https://api-adservices.apple.com/api/v1/"

    let url: URL
    private let session: URLSession

    /// `timeout` must exceed the ~1 s for which Apple holds a 404 before answering it.
    init(url: URL, timeout: Double, connections: Int) {
        self.url = url
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = connections
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 2
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        session = URLSession(configuration: configuration)
    }

    /// Calls once; `completion` gets the HTTP status (nil when no answer came) and the body.
    func call(token: String, completion: @escaping @Sendable (Int?, [UInt8]) -> Void) {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(token.utf8)
        session.dataTask(with: request) { data, response, error in
            guard error == nil, let http = response as? HTTPURLResponse else { return completion(nil, []) }
            completion(http.statusCode, data.map { Array($0) } ?? [])
        }.resume()
    }

    func stop() {
        session.invalidateAndCancel()
    }
}
