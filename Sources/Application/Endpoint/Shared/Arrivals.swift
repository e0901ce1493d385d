import DurableFiles
import Foundation
import Locking
import Primitives

/// When each served site last received something on each of its paths, and each app its last
/// postback copy: the first question when numbers are missing. A wrong
/// `NSAdvertisingAttributionReportEndpoint` or `AttributionCopyEndpoint` in an app's Info.plist,
/// or a front that does not pass `/.well-known/` on, shows as an empty table; here it shows as a
/// site or app that has heard nothing for 48 hours.
///
/// Two facts per path: when a request last reached it (the front and DNS work), and when one was
/// last accepted (a report judged accepted, a postback whose signature checked, a token taken).
/// Anyone can reach a path with junk; only what is accepted clears the silence warning, so a
/// stranger cannot hide a broken Info.plist.
///
/// Kept in `DATA/arrivals.json`, written once a minute when something changed and at a stop: a
/// crash loses at most a minute of "last received", never a record.
final class Arrivals: PeriodicallySwept {
    enum Path: String, CaseIterable, Codable, Sendable {
        case pcmReports = "pcm_reports"
        case skadnetwork
        case adattributionkit
        case appleAdsTokens = "apple_ads_tokens"
    }

    /// Times in milliseconds since 1970: when a request last reached each path, when one was last
    /// accepted there, and when this endpoint first knew the site or app (a new one is not silent
    /// before it had a chance).
    struct Times: Codable, Sendable, Equatable {
        var firstKnown: Int64
        /// Reached: any request, refused or not.
        var last: [String: Int64] = [:]
        var accepted: [String: Int64] = [:]

        enum CodingKeys: String, CodingKey { case firstKnown = "first_known", last, accepted }

        init(firstKnown: Int64) {
            self.firstKnown = firstKnown
        }

        // A file written before "accepted" was kept has none.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            firstKnown = try container.decode(Int64.self, forKey: .firstKnown)
            last = try container.decodeIfPresent([String: Int64].self, forKey: .last) ?? [:]
            accepted = try container.decodeIfPresent([String: Int64].self, forKey: .accepted) ?? [:]
        }
    }

    struct Book: Codable, Sendable, Equatable {
        var sites: [String: Times] = [:]
        var apps: [String: Times] = [:]
    }

    /// Sites and apps kept at most: in development mode any host is a site, and any app id may
    /// arrive; past this, new ones are not kept (the served and registered are known at start).
    static let capacity = 10_000
    /// How long silence lasts before the page and `/metrics` call it out.
    static let silenceWarning: Int64 = 48 * 3_600_000

    let thread = PeriodicSweep(named: "arrivals", priority: .background)
    private let file: DurableJSONFile<Book>
    private let state: Locked<(book: Book, changed: Bool)>
    /// The served sites and the registered apps' ids, known at each sweep (`knows`).
    private let known = Locked<@Sendable () -> (sites: [String], apps: [String])>({ ([], []) })
    private let clock: @Sendable () -> Timestamp

    init(dataDirectory: String, clock: @escaping @Sendable () -> Timestamp) {
        self.clock = clock
        file = DurableJSONFile(path: dataDirectory + "/arrivals.json", empty: Book())
        // A damaged file costs only the times it held: arrivals start over, the start goes on.
        state = Locked(((try? file.load()) ?? Book(), false))
    }

    /// The served sites and registered apps, known from `now` on unless known before.
    func know(sites: [String], apps: [String], now: Timestamp) {
        state.withLock { s in
            for site in sites where s.book.sites[site] == nil {
                s.book.sites[site] = Times(firstKnown: now.millisecondsSinceEpoch)
                s.changed = true
            }
            for app in apps where s.book.apps[app] == nil {
                s.book.apps[app] = Times(firstKnown: now.millisecondsSinceEpoch)
                s.changed = true
            }
        }
    }

    /// A request reached `path` at `site`, whatever became of it.
    func received(_ path: Path, site: String, at time: Timestamp) {
        state.withLock { s in
            Self.note(&s.book.sites, site, path, time.millisecondsSinceEpoch, \.last)
            s.changed = true
        }
    }

    /// What arrived on `path` at `site` was accepted (and had reached it).
    func accepted(_ path: Path, site: String, at time: Timestamp) {
        state.withLock { s in
            Self.note(&s.book.sites, site, path, time.millisecondsSinceEpoch, \.last)
            Self.note(&s.book.sites, site, path, time.millisecondsSinceEpoch, \.accepted)
            s.changed = true
        }
    }

    /// A postback for `app` was accepted.
    func received(_ path: Path, app: String, at time: Timestamp) {
        state.withLock { s in
            Self.note(&s.book.apps, app, path, time.millisecondsSinceEpoch, \.last)
            Self.note(&s.book.apps, app, path, time.millisecondsSinceEpoch, \.accepted)
            s.changed = true
        }
    }

    private static func note(_ times: inout [String: Times], _ key: String, _ path: Path, _ ms: Int64,
                             _ fact: WritableKeyPath<Times, [String: Int64]>) {
        guard times[key] != nil || times.count < capacity else { return }
        times[key, default: Times(firstKnown: ms)][keyPath: fact][path.rawValue] = max(ms, times[key]?[keyPath: fact][path.rawValue] ?? .min)
    }

    var book: Book { state.withLock { $0.book } }

    /// Where each sweep learns the served sites and the registered apps.
    func knows(_ list: @escaping @Sendable () -> (sites: [String], apps: [String])) {
        known.withLock { $0 = list }
    }

    func sweep() {
        let (sites, apps) = known.withLock { $0 }()
        know(sites: sites, apps: apps, now: clock())
        let changed: Book? = state.withLock { s in
            guard s.changed else { return nil }
            s.changed = false
            return s.book
        }
        guard let changed else { return }
        do {
            try file.save(changed)
        } catch {
            state.withLock { $0.changed = true }
            EventLog.write("arrivals_not_saved", ["error": .string("\(error)")])
        }
    }

    /// Writes what changed since the last sweep; for a stop.
    func stopAndSave() {
        stop()
        sweep()
    }
}
