import Dispatch
import Foundation
import Locking
import Primitives

/// Looks up the names of the Apple Ads ids the endpoint has seen, with `--apple-ads-platform`: on
/// a thread of its own (`apple-ads-names`, at nice 19), never on a request's path. Each hour it
/// looks at the attributed installs' ids; a full refresh runs once a day, and sooner (at most
/// once an hour) when an id seen has no name yet.
///
/// A refresh asks for every campaign of the ad account, then the ad groups of each campaign seen
/// and the keywords of each ad group seen, page by page (`AppleAdsPlatformClient`): for C
/// campaigns, G campaigns and A ad groups seen, about ⌈C/1000⌉ + G + A + 1 requests a day.
final class AppleAdsNameLookup: PeriodicallySwept {
    /// The ids to name now: campaigns, ad groups by campaign, keywords by ad group.
    struct Seen: Sendable, Equatable {
        var campaigns: Set<Int64> = []
        var adGroups: [Int64: Set<Int64>] = [:]
        var keywords: [Int64: Set<Int64>] = [:]

        init() {}

        /// The ids of every attributed install the Apple Ads view counts.
        init(_ summary: AppleAdsSummary) {
            for key in summary.installs.keys {
                guard let campaign = key.campaign else { continue }
                campaigns.insert(campaign)
                guard let adGroup = key.adGroup else { continue }
                adGroups[campaign, default: []].insert(adGroup)
                if let keyword = key.keyword { keywords[adGroup, default: []].insert(keyword) }
            }
        }
    }

    static let fullRefresh: Int64 = 86_400_000
    static let missingRetry: Int64 = 3_600_000

    let thread = PeriodicSweep(named: "apple-ads-names", priority: .background, interval: 3600)
    let names: AppleAdsNames
    private let client: AppleAdsPlatformClient
    private let seen: @Sendable () -> Seen
    private let clock: @Sendable () -> Timestamp

    init(names: AppleAdsNames, client: AppleAdsPlatformClient, seen: @escaping @Sendable () -> Seen,
         clock: @escaping @Sendable () -> Timestamp) {
        self.names = names
        self.client = client
        self.seen = seen
        self.clock = clock
    }

    func stopLookups() {
        client.stop()
        stop()
    }

    /// Whether a refresh is due: a day after the last good one, or an hour after the last try when
    /// an id seen has no name; and never before a `retryAt` the API asked for.
    static func isDue(_ book: AppleAdsNames.Book, seen: Seen, now: Int64, retryAt: Int64?) -> Bool {
        if let retryAt, now < retryAt { return false }
        guard !seen.campaigns.isEmpty else { return false }
        let missing = seen.campaigns.contains { book.campaigns[String($0)] == nil }
            || seen.adGroups.values.contains { $0.contains { book.adGroups[String($0)] == nil } }
            || seen.keywords.values.contains { $0.contains { book.keywords[String($0)] == nil } }
        if let refreshed = book.refreshedAt, now - refreshed < fullRefresh {
            guard missing else { return false }
            return book.attemptedAt.map { now - $0 >= missingRetry } ?? true
        }
        // No good refresh in a day: try, but not more than once an hour.
        return book.attemptedAt.map { now - $0 >= missingRetry } ?? true
    }

    /// The time the API asked to be left alone until (a long `Retry-After`).
    private let retryAt = Locked<Int64?>(nil)

    /// An admin asked for a refresh now (`POST /api/apple-ads/names/refresh`).
    private let asked = Locked<(now: Bool, at: DispatchTime?)>((false, nil))
    /// The shortest time between two refreshes asked by hand.
    static let askedInterval = 5.0

    /// Asks the thread for a refresh now; false (and the seconds to wait) when one was asked less
    /// than `askedInterval` ago.
    func askRefresh() -> (asked: Bool, retryAfter: Double) {
        let answer = asked.withLock { state -> (Bool, Double) in
            if let at = state.at {
                let since = Double(DispatchTime.now().uptimeNanoseconds - at.uptimeNanoseconds) / 1e9
                if since < Self.askedInterval { return (false, Self.askedInterval - since) }
            }
            state = (true, .now())
            return (true, 0)
        }
        if answer.0 { thread.wake() }
        return answer
    }

    func sweep() {
        let now = clock().millisecondsSinceEpoch
        let ids = seen()
        let byHand = asked.withLock { state -> Bool in
            defer { state.now = false }
            return state.now
        }
        let waitAsked = retryAt.withLock { $0 }.map { now < $0 } ?? false
        let askedNow = byHand && !waitAsked && !ids.campaigns.isEmpty
        guard askedNow || Self.isDue(names.book, seen: ids, now: now, retryAt: retryAt.withLock { $0 }) else {
            return
        }
        refresh(ids, now: now)
    }

    /// Asks for every name `ids` needs, keeping what each step learned even when a later one fails.
    func refresh(_ ids: Seen, now: Int64) {
        let before = client.requests
        var campaigns: [String: String] = [:], adGroups: [String: String] = [:], keywords: [String: String] = [:]
        var failure: AppleAdsPlatformClient.Failure?
        do throws(AppleAdsPlatformClient.Failure) {
            for fields in try client.query("campaigns/query") {
                if let (id, name) = AppleAdsNames.named(fields, nameKey: "name") { campaigns[id] = name }
            }
            for campaign in ids.adGroups.keys.sorted() where !thread.stopping {
                for fields in try client.query("adgroups/query", filters: [("campaignId", String(campaign))]) {
                    if let (id, name) = AppleAdsNames.named(fields, nameKey: "name") { adGroups[id] = name }
                }
            }
            for adGroup in ids.keywords.keys.sorted() where !thread.stopping {
                for fields in try client.query("keywords/query", filters: [("adGroupId", String(adGroup))]) {
                    if let (id, name) = AppleAdsNames.named(fields, nameKey: "text") { keywords[id] = name }
                }
            }
        } catch {
            failure = error
        }
        retryAt.withLock { $0 = failure?.retryAt?.millisecondsSinceEpoch }
        let asked = client.requests - before
        names.update { book in
            func merge(_ found: [String: String], into kept: inout [String: String]) {
                for (id, name) in found where kept.count < AppleAdsNames.maxPerKind || kept[id] != nil { kept[id] = name }
            }
            merge(campaigns, into: &book.campaigns)
            merge(adGroups, into: &book.adGroups)
            merge(keywords, into: &book.keywords)
            book.attemptedAt = now
            book.requests += asked
            if let failure {
                book.lastError = failure.description
            } else {
                book.refreshedAt = now
                book.lastError = nil
            }
        }
        EventLog.write(failure == nil ? "apple_ads_names_refreshed" : "apple_ads_names_refresh_failed", [
            "requests": .number(String(asked)), "campaigns": .number(String(campaigns.count)),
            "ad_groups": .number(String(adGroups.count)), "keywords": .number(String(keywords.count)),
            "error": failure.map { .string($0.description) } ?? .null,
        ])
    }
}
