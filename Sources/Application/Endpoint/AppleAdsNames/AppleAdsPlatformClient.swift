import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Primitives
import Signatures

/// The Apple Ads Platform API 1.0, as far as names go (docs/APPLE.md §3): an access token from
/// Apple's OAuth server for a client secret signed here (ES256, `Signatures`), then `POST
/// …/query` pages with `Authorization: Bearer` and `X-AP-Context: adAccountId=…`.
///
/// Called from the name lookup's own thread only, never on a request's path. At most one
/// request every `pace` seconds; a 429's `Retry-After` (or `RateLimit-Reset` once
/// `RateLimit-Remaining` is 0) is waited out when short, and ends the refresh when long; a 401
/// fetches a new token once; a 5xx or no answer ends the refresh, keeping what it learned.
final class AppleAdsPlatformClient: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// When to try again, if the API said (a long `Retry-After`).
        var retryAt: Timestamp?
    }

    let credentials: AppleAdsPlatformCredentials
    let api: URL
    let tokenURL: URL
    /// Seconds between two requests.
    let pace: Double
    let timeout: Double
    private let clock: @Sendable () -> Timestamp
    private let session: URLSession
    /// Woken by `stop`: a wait between requests ends at once.
    private let interrupt = DispatchSemaphore(value: 0)
    /// Set by `stop`, under `lock`: no task is made once the session is being invalidated
    /// (Foundation on Linux traps on a task of an invalidated session).
    private let lock = NSLock()
    private var stopped = false
    /// The bearer token, and when to fetch the next: a minute before it expires, or halfway
    /// through a shorter life.
    private var token: (value: String, renewAt: Int64)?
    private var lastRequest: DispatchTime?
    /// Every request sent (token and API), for the metrics and the measurements.
    private(set) var requests = 0

    /// Results asked per page; Apple's limit for most objects in v5 was 1,000.
    static let pageSize = 1_000
    /// Pages read at most per query, so that a server that never ends its paging cannot hold the thread.
    static let maxPages = 1_000
    /// Waits longer than this end the refresh instead.
    static let longestWait = 60.0

    init(credentials: AppleAdsPlatformCredentials, api: URL, tokenURL: URL, pace: Double, timeout: Double = 30,
         clock: @escaping @Sendable () -> Timestamp) {
        self.credentials = credentials
        self.api = api
        self.tokenURL = tokenURL
        self.pace = pace
        self.timeout = timeout
        self.clock = clock
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        session = URLSession(configuration: configuration)
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        interrupt.signal()
        session.invalidateAndCancel()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// The client secret: a JWT signed with the client's key, good for an hour (Apple allows up to 180 days).
    func clientSecret(now: Timestamp) -> String {
        let iat = now.millisecondsSinceEpoch / 1000
        var header = "{\"alg\":\"ES256\",\"kid\":"
        JSONValue.writeString(credentials.keyID, to: &header)
        header += "}"
        var claims = "{\"sub\":"
        JSONValue.writeString(credentials.clientID, to: &claims)
        claims += ",\"aud\":\"https://appleid.apple.com\",\"iat\":\(iat),\"exp\":\(iat + 3600),\"iss\":"
        JSONValue.writeString(credentials.teamID, to: &claims)
        claims += "}"
        return ES256JWT.sign(headerJSON: header, claimsJSON: claims, key: credentials.key)
    }

    /// A bearer token, fetched when there is none or it is about to expire.
    func accessToken() throws(Failure) -> String {
        let now = clock().millisecondsSinceEpoch
        if let token, now < token.renewAt { return token.value }
        var form = URLComponents()
        form.queryItems = [URLQueryItem(name: "grant_type", value: "client_credentials"),
                           URLQueryItem(name: "client_id", value: credentials.clientID),
                           URLQueryItem(name: "client_secret", value: clientSecret(now: clock())),
                           URLQueryItem(name: "scope", value: "searchadsorg")]
        var request = URLRequest(url: tokenURL, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        // `+` is a space in a form: a JWT has none, but a client id might.
        request.httpBody = Data((form.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B").utf8)
        let answer = try send(request)
        guard answer.status == 200 else {
            throw Failure(description: "Apple's OAuth server answered \(answer.status) to the client secret: \(Self.excerpt(answer.body))")
        }
        guard case .object(let members)? = try? JSONParser().parse(answer.body),
              case .string(let value)? = members.first(where: { $0.key == "access_token" })?.value, !value.isEmpty else {
            throw Failure(description: "Apple's OAuth server answered 200 without an access_token")
        }
        var lifetime: Int64 = 3600
        if case .number(let text)? = members.first(where: { $0.key == "expires_in" })?.value, let seconds = Int64(text), seconds > 0 {
            lifetime = min(seconds, 86_400)
        }
        token = (value, clock().millisecondsSinceEpoch + max(lifetime * 1000 - 60_000, lifetime * 500))
        return value
    }

    /// Every result of `POST {api}{path}` with these filters, page by page.
    func query(_ path: String, filters: [(field: String, value: String)] = []) throws(Failure) -> [[JSONMember]] {
        var results: [[JSONMember]] = []
        var offset = 0
        for _ in 0..<Self.maxPages {
            var body = "{"
            if !filters.isEmpty {
                body += "\"filters\":[" + filters.map { filter in
                    var item = "{\"field\":"
                    JSONValue.writeString(filter.field, to: &item)
                    item += ",\"operator\":\"EQUALS\",\"value\":"
                    JSONValue.writeString(filter.value, to: &item)
                    return item + "}"
                }.joined(separator: ",") + "],"
            }
            body += "\"pagination\":{\"offset\":\(offset),\"pageSize\":\(Self.pageSize),\"fetchTotalCount\":true}}"
            let page = try call(path, body: Array(body.utf8))
            guard case .object(let members)? = try? JSONParser(maxDepth: 64).parse(page),
                  case .array(let items)? = members.first(where: { $0.key == "result" })?.value else {
                throw Failure(description: "\(path) answered 200 without a result list")
            }
            for item in items { if case .object(let fields) = item { results.append(fields) } }
            var total: Int?
            if case .object(let pagination)? = members.first(where: { $0.key == "pagination" })?.value,
               case .number(let text)? = pagination.first(where: { $0.key == "totalCount" })?.value {
                total = Int(text)
            }
            offset += items.count
            // The total, when the API gives it, says when the last page came: a server may cap
            // its pages below the size asked. Without it, a short page is the last.
            if items.isEmpty { return results }
            if let total { if offset >= total { return results } } else if items.count < Self.pageSize { return results }
        }
        throw Failure(description: "\(path) was still paging after \(Self.maxPages) pages")
    }

    /// One API call, with a new token once if the first is refused.
    private func call(_ path: String, body: [UInt8]) throws(Failure) -> [UInt8] {
        for attempt in 0..<2 {
            var request = URLRequest(url: api.appendingPathComponent(path), timeoutInterval: timeout)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer " + (try accessToken()), forHTTPHeaderField: "Authorization")
            request.setValue("adAccountId=" + credentials.adAccountID, forHTTPHeaderField: "X-AP-Context")
            request.httpBody = Data(body)
            var answer = try send(request)
            // Too many requests: wait as told when it is short, else end here.
            var waits = 0
            while answer.status == 429 && waits < 3 {
                // A wait that is no finite number of seconds is a day's.
                let asked = Self.retryAfter(answer.headers) ?? 1
                let wait = asked.isFinite ? min(asked, 86_400) : 86_400
                guard wait <= Self.longestWait else {
                    throw Failure(description: "the API asks to wait \(Int(wait)) s (429)",
                                  retryAt: Timestamp(millisecondsSinceEpoch: clock().millisecondsSinceEpoch + Int64(wait * 1000)))
                }
                try pause(wait)
                answer = try send(request)
                waits += 1
            }
            switch answer.status {
            case 200...299:
                if answer.headers["ratelimit-remaining"].flatMap(Int.init) == 0,
                   let reset = answer.headers["ratelimit-reset"].flatMap(Double.init), reset > 0, reset.isFinite {
                    try pause(min(reset, Self.longestWait))
                }
                return answer.body
            case 401 where attempt == 0:
                // Expired or revoked: one new token, then the call again.
                token = nil
                continue
            default:
                throw Failure(description: "\(path) answered \(answer.status): \(Self.excerpt(answer.body))")
            }
        }
        throw Failure(description: "\(path) refused a new access token too (401): check the client id, team id and key id")
    }

    private func send(_ request: URLRequest) throws(Failure) -> (status: Int, headers: [String: String], body: [UInt8]) {
        if let lastRequest {
            let next = lastRequest + pace, now = DispatchTime.now()
            if next > now { try pause(Double(next.uptimeNanoseconds - now.uptimeNanoseconds) / 1e9) }
        }
        lastRequest = .now()
        requests += 1
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: (Int, [String: String], [UInt8]) = (0, [:], [])
        nonisolated(unsafe) var failure: String?
        lock.lock()
        guard !stopped else {
            lock.unlock()
            throw Failure(description: "stopped")
        }
        let task = session.dataTask(with: request) { data, response, error in
            if let response = response as? HTTPURLResponse {
                var headers: [String: String] = [:]
                for (name, value) in response.allHeaderFields {
                    if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
                }
                result = (response.statusCode, headers, data.map { [UInt8]($0.prefix(64 << 20)) } ?? [])
            } else {
                failure = error?.localizedDescription ?? "no answer"
            }
            done.signal()
        }
        task.resume()
        lock.unlock()
        done.wait()
        if let failure { throw Failure(description: "\(request.url?.host ?? "the API") did not answer: \(failure)") }
        return result
    }

    /// Waits `seconds`, or until `stop`.
    private func pause(_ seconds: Double) throws(Failure) {
        guard seconds > 0 else { return }
        if interrupt.wait(timeout: .now() + seconds) == .success || isStopped {
            interrupt.signal()
            throw Failure(description: "stopped")
        }
    }

    /// `Retry-After` in seconds (Apple's page says to prefer it over `RateLimit-Reset`).
    static func retryAfter(_ headers: [String: String]) -> Double? {
        if let value = headers["retry-after"].flatMap(Double.init), value >= 0 { return value }
        return headers["ratelimit-reset"].flatMap(Double.init)
    }

    static func excerpt(_ body: [UInt8]) -> String {
        String(decoding: body.prefix(200), as: UTF8.self)
    }
}
