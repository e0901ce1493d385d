import AppDevelopers
import Foundation
import Locking
import Postbacks
import Primitives
import RecordLog

/// The Apps view's counts per UTC day and site, kept as postbacks are stored, so that a summary
/// costs the days it covers, not the postbacks, and answers for days whose records retention
/// removed. A start rebuilds them from the segments' digests (those of removed segments are kept
/// for this) and the log written since.
///
/// A delivery that came again is counted at its postback's origin (the day and site of the first
/// delivery, as the cluster's view counts them), which its retry record names. For retry records
/// written before the origin was kept, the ledger says it while it holds the postback (a first
/// start after the upgrade, before any key table, holds them all); failing that (its postback in a
/// key table, or gone from memory before the digest was written) a retry counts on its own day
/// and site, so such a count can move between days from one start to the next.
///
/// Memory: a day's conversions are rows of numbers (`ConversionTable`), frozen once the day is
/// over; the other counts are a few small dictionaries a day and site.
final class AppsAggregates: SegmentDigestOwner {
    fileprivate struct DaySite: Hashable, Codable {
        var day: Int32
        var site: String
    }

    private struct Day {
        /// Every count but the conversions.
        var counts: AppsSummary
        var conversions = ConversionTable()
    }

    private struct State {
        var days: [DaySite: Day] = [:]
        var names = NameTable()
        /// The latest day a postback was counted on: days before it are frozen.
        var newestDay = Int32.min

        mutating func add(_ key: DaySite, _ summary: AppsSummary) {
            var summary = summary
            let conversions = summary.removeConversions()
            // In place: a day copied out and written back would copy its every campaign per postback.
            let site = key.site
            days[key, default: Day(counts: AppsSummary(sites: site.isEmpty ? [] : [site]))].counts.merge(summary)
            for (conversion, counts) in conversions {
                // The cell's number: bits 0–6 the value code (0–67), bit 7 a signature no key could
                // check, bits 8–31 the schema reading's code (`SchemaReading.code`, 24 bits).
                let numbers = ConversionTable.Key(network: names.number(conversion.adNetwork), campaign: names.number(conversion.campaign),
                                                  app: names.number(conversion.appID),
                                                  value: UInt32(clamping: conversion.valueCode) & 0x7F | (conversion.unverifiable == true ? 0x80 : 0)
                                                      | UInt32(clamping: conversion.schemaCode) << 8)
                days[key, default: Day(counts: AppsSummary(sites: site.isEmpty ? [] : [site]))].conversions.add(numbers, ConversionTable.Counts(counts))
            }
            if key.day > newestDay {
                newestDay = key.day
                for (other, _) in days where other.day < newestDay { days[other]?.conversions.freeze() }
            }
        }
    }

    private let state = Locked(State())
    /// Where a postback was stored, for retry records that do not say (`PostbackLedger.origin(of:)`).
    private let originOf: @Sendable (UInt64) -> PostbackOrigin?
    /// Which version of its app's schema a postback's value was set under (`AppRegistry.schemaReading`).
    private let schemaReading: AppsSummary.SchemaReader

    init(originOf: @escaping @Sendable (UInt64) -> PostbackOrigin? = { _ in nil },
         schemaReading: @escaping AppsSummary.SchemaReader = { _, _ in .beforeAnyVersion }) {
        self.originOf = originOf
        self.schemaReading = schemaReading
    }

    /// Where the postback a retry record repeats was stored.
    fileprivate static func origin(of retry: (original: UInt64, site: String, origin: PostbackOrigin?), at view: RecordLog.RecordView,
                                   originOf: (UInt64) -> PostbackOrigin?) -> PostbackOrigin {
        retry.origin ?? originOf(retry.original) ?? PostbackOrigin(receivedAt: view.time, site: retry.site)
    }

    /// Counts a stored postback; returns the app it is for (`Facts.appID`), read from the same parse.
    @discardableResult
    func add(_ postback: StoredPostback) -> String? {
        let key = DaySite(day: postback.receivedAt.day, site: postback.draft.site)
        var summary = AppsSummary(sites: [])
        let facts = AppsSummary.Facts(postback)
        summary.add(facts, retries: 0, schema: facts.schemaReading(receivedAt: postback.receivedAt, schemaReading))
        state.withLock { $0.add(key, summary) }
        return facts.appID
    }

    /// Counts a delivery that came again of the postback stored at `origin`.
    func addDuplicate(at origin: PostbackOrigin) {
        var summary = AppsSummary(sites: [])
        summary.addDuplicates(1)
        state.withLock { $0.add(DaySite(day: origin.day, site: origin.site), summary) }
    }

    /// Takes one record as replay shows it.
    func take(_ view: RecordLog.RecordView) {
        if let postback = StoredPostback.decode(view) {
            add(postback)
        } else if let retry = RecordLog.retry(view) {
            addDuplicate(at: Self.origin(of: retry, at: view, originOf: originOf))
        }
    }

    /// Days held (by site), their conversion rows, and about the bytes the rows take: what grows
    /// with history (`/metrics`).
    var held: (days: Int, rows: Int, rowBytes: Int) {
        state.withLock { s in
            s.days.values.reduce((s.days.count, 0, 0)) { ($0.0, $0.1 + $1.conversions.rows, $0.2 + $1.conversions.bytes) }
        }
    }

    /// The counts of the query's days and site; `sites` names every site with postbacks in those days.
    ///
    /// Counted outside the lock, on a copy (copy-on-write), so that a postback stored meanwhile
    /// never waits for a long read.
    /// With `registry`, the estimated revenue of each day too (`AppsSummary.perDayRevenue`).
    func summary(_ query: AppsSummary.Query, registry: AppRegistry? = nil) -> AppsSummary {
        let s = state.withLock { $0 }
        do {
            var sites: Set<String> = []
            var total = AppsSummary(sites: [])
            for (key, day) in s.days where key.day >= query.from && key.day <= query.to {
                if !key.site.isEmpty, query.readableSites?.contains(key.site) ?? true { sites.insert(key.site) }
                guard query.reads(key.site) else { continue }
                total.merge(day.counts)
                var installs = AppsSummary.ConversionCounts()
                day.conversions.forEach { numbers, counts in
                    let summary = counts.summary
                    installs.add(AppsSummary.ConversionCounts(installs: summary.installs, redownloads: summary.redownloads,
                                                              reEngagements: summary.reEngagements))
                    let conversion = AppsSummary.ConversionKey(adNetwork: s.names.name(numbers.network), campaign: s.names.name(numbers.campaign),
                                                               appID: s.names.name(numbers.app), value: Int(numbers.value & 0x7F),
                                                               schema: Int(numbers.value >> 8), unverifiable: numbers.value & 0x80 != 0 ? true : nil)
                    total.addConversions(conversion, summary)
                    if let registry { total.addRevenue(day: key.day, key: conversion, postbacks: summary.postbacks, registry: registry) }
                }
                total.addPerDay(key.day, installs)
            }
            total.merge(AppsSummary(sites: sites))
            // Every day of the period has its row, zeros included.
            if total.perDay == nil { total.perDay = [:] }
            return total
        }
    }

    // MARK: - Digests

    /// 3: duplicates are counted at their postback's origin. 4: conversions by value too, and
    /// every accepted postback (the campaign × value table). 5: unverifiable postbacks by ad network.
    /// 6: conversions by the version of their app's schema too.
    var digestName: String { "apps-6" }
    /// Its days outlive their records.
    var keptAfterRemoval: Bool { true }

    func digester() -> any SegmentDigester { Digester(originOf: originOf, schemaReading: schemaReading) }

    /// The segment's counts by day and site, as JSON.
    struct Digester: SegmentDigester {
        let originOf: @Sendable (UInt64) -> PostbackOrigin?
        let schemaReading: AppsSummary.SchemaReader
        fileprivate var days: [DaySite: AppsSummary] = [:]

        mutating func take(_ view: RecordLog.RecordView) {
            if let postback = StoredPostback.decode(view) {
                let key = DaySite(day: postback.receivedAt.day, site: postback.draft.site)
                let facts = AppsSummary.Facts(postback)
                days[key, default: AppsSummary(sites: [])].add(facts, retries: 0,
                                                               schema: facts.schemaReading(receivedAt: postback.receivedAt, schemaReading))
            } else if let retry = RecordLog.retry(view) {
                let origin = AppsAggregates.origin(of: retry, at: view, originOf: originOf)
                days[DaySite(day: origin.day, site: origin.site), default: AppsSummary(sites: [])].addDuplicates(1)
            }
        }

        func finish() -> [UInt8] {
            let pairs = days.map { Pair(key: $0.key, summary: $0.value) }
            return (try? [UInt8](JSONEncoder().encode(pairs))) ?? []
        }
    }

    private struct Pair: Codable {
        var key: DaySite
        var summary: AppsSummary
    }

    /// A removed segment's digest may hold an earlier version's section. `apps-2`: the same
    /// counts, with each conversion's counts by their kind's name. `apps-3` to `apps-5` read as
    /// they are: their days have no campaign × value cells (3), no unverifiable postbacks by ad
    /// network (3 and 4), and no schema versions (3 to 5: read with version 1, the one schema
    /// there was before versions were kept).
    func readRemovedDigest(_ sections: [String: [UInt8]], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        if let bytes = sections[digestName] ?? sections["apps-5"] ?? sections["apps-4"] ?? sections["apps-3"] { return readDigest(bytes, of: digest) }
        return sections["apps-2"].flatMap(Self.fromApps2).flatMap { readDigest($0, of: digest) }
    }

    /// `apps-2`'s JSON as `apps-3`'s: conversions went from `{"installs": n, "redownloads": n,
    /// "re_engagements": n}` (kinds absent when none) to `ConversionCounts`. Nil if it is not that.
    static func fromApps2(_ bytes: [UInt8]) -> [UInt8]? {
        guard var pairs = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [[String: Any]] else { return nil }
        for i in pairs.indices {
            guard var summary = pairs[i]["summary"] as? [String: Any] else { return nil }
            if let conversions = summary["conversions"] as? [Any] {
                var upgraded: [Any] = []
                // A dictionary with struct keys is written as key, value, key, value.
                for (n, element) in conversions.enumerated() {
                    guard n % 2 == 1 else {
                        upgraded.append(element)
                        continue
                    }
                    guard let kinds = element as? [String: Any] else { return nil }
                    upgraded.append(["installs": kinds["installs"] as? Int ?? 0, "redownloads": kinds["redownloads"] as? Int ?? 0,
                                     "reEngagements": kinds["re_engagements"] as? Int ?? 0])
                }
                summary["conversions"] = upgraded
            }
            pairs[i]["summary"] = summary
        }
        return (try? JSONSerialization.data(withJSONObject: pairs)).map { [UInt8]($0) }
    }

    func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        guard let pairs = try? JSONDecoder().decode([Pair].self, from: Data(bytes)) else { return nil }
        return { [state] in
            state.withLock { s in
                for pair in pairs { s.add(pair.key, pair.summary) }
            }
        }
    }
}
