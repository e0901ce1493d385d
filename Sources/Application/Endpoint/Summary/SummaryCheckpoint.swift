import PCM
import Foundation
import RecordLog

/// The summary's aggregates saved with the log prefix they were built from, so that a restart
/// rebuilds only what the log gained since instead of reading every report again.
///
/// The log stays the truth: a checkpoint is used only if its checksum holds and the log still
/// begins with exactly the prefix it names (`LogPrefix`); anything else is rebuilt from the log.
///
/// `data/summary.checkpoint`, little-endian:
/// `magic "AESUMCP2" · prefix end i64 · records i64 · digest u64 · payload length u64 · payload · crc32c u32`,
/// the checksum over everything before it. The payload is the names, then per day every count.
enum SummaryCheckpoint {
    static let fileName = "summary.checkpoint"
    static let magic = Array("AESUMCP2".utf8)
    static let headerSize = 8 + 8 + 8 + 8 + 8

    enum ReadError: Error, Equatable {
        case missing
        /// Cut short, a wrong checksum, or not a checkpoint at all.
        case damaged(String)
    }

    /// The prefix a checkpoint claims, from its header alone, to be checked against the log while
    /// it is replayed; nil when there is no readable header.
    static func claimedPrefix(atPath path: String) -> LogPrefix? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: headerSize), head.count == headerSize else { return nil }
        var reader = ByteReader(Array(head))
        guard reader.bytes(magic.count) == magic, let end = reader.int64(), let records = reader.int64(),
              let digest = reader.uint64() else { return nil }
        return LogPrefix(end: Int(end), records: Int(records), digest: digest)
    }

    /// What the summary is rebuilt from at start: the checkpoint's aggregates and the log offset
    /// after them when the log, as replay found it (`replayed`, fingerprinted at the `claimed`
    /// offset), still begins with the prefix the checkpoint names; else nothing and offset 0.
    /// `outcome` says which for the log: `used`, `missing`, `stale` or `damaged…`.
    static func restore(atPath path: String, claimed: LogPrefix?, replayed: LogPrefix?)
        -> (aggregates: SummaryAggregates, from: Int, outcome: String) {
        guard let claimed else {
            return (SummaryAggregates(), 0, FileManager.default.fileExists(atPath: path) ? "damaged: no readable header" : "missing")
        }
        guard replayed == claimed else { return (SummaryAggregates(), 0, "stale") }
        switch read(atPath: path) {
        case .success(let (prefix, aggregates)) where prefix == claimed: return (aggregates, prefix.end, "used")
        case .success: return (SummaryAggregates(), 0, "stale")  // replaced since its header was read
        case .failure(.missing): return (SummaryAggregates(), 0, "missing")
        case .failure(.damaged(let why)): return (SummaryAggregates(), 0, "damaged: " + why)
        }
    }

    static func read(atPath path: String) -> Result<(LogPrefix, SummaryAggregates), ReadError> {
        guard let data = FileManager.default.contents(atPath: path) else { return .failure(.missing) }
        let bytes = Array(data)
        guard bytes.count >= headerSize + 4 else { return .failure(.damaged("\(bytes.count) bytes, shorter than a header")) }
        let body = bytes.count - 4
        let (stored, computed) = bytes.withUnsafeBytes {
            (UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: body, as: UInt32.self)),
             CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<body])))
        }
        guard stored == computed else { return .failure(.damaged("checksum mismatch")) }
        var reader = ByteReader(bytes, end: body)
        guard reader.bytes(magic.count) == magic, let end = reader.int64(), let records = reader.int64(),
              let digest = reader.uint64(), let length = reader.uint64(), Int(length) == bytes.count - 4 - headerSize else {
            return .failure(.damaged("not a summary checkpoint of this version"))
        }
        guard let aggregates = decode(&reader), reader.isAtEnd else { return .failure(.damaged("payload does not decode")) }
        return .success((LogPrefix(end: Int(end), records: Int(records), digest: digest), aggregates))
    }

    /// Writes atomically: a temporary file, flushed, renamed over the old one, the directory flushed.
    /// Returns the bytes written.
    @discardableResult
    static func write(_ aggregates: SummaryAggregates, prefix: LogPrefix, toPath path: String) throws -> Int {
        var payload: [UInt8] = []
        encode(aggregates, into: &payload)
        var bytes = magic
        bytes.reserveCapacity(headerSize + payload.count + 4)
        bytes.appendLE(Int64(prefix.end))
        bytes.appendLE(Int64(prefix.records))
        bytes.appendLE(prefix.digest)
        bytes.appendLE(UInt64(payload.count))
        bytes.append(contentsOf: payload)
        bytes.appendLE(CRC32C.checksum(bytes))

        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CheckpointError(description: "cannot create \(temporary): errno \(errno)") }
        var written = 0
        let ok = bytes.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let n = Foundation.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                written += n
            }
            return fsync(fd) == 0
        }
        let error = errno
        close(fd)
        guard ok else {
            unlink(temporary)
            throw CheckpointError(description: "cannot write \(temporary): errno \(error)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CheckpointError(description: "cannot replace \(path): errno \(errno)")
        }
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            _ = close(directory)
        }
        return bytes.count
    }

    struct CheckpointError: Error, CustomStringConvertible {
        var description: String
    }

    // MARK: - The payload

    private static let noCampaign = UInt32.max

    static func encode(_ a: SummaryAggregates, into out: inout [UInt8]) {
        out.appendLE(UInt32(a.names.count))
        for name in a.names {
            out.appendLE(UInt32(name.utf8.count))
            out.append(contentsOf: name.utf8)
        }
        out.appendLE(UInt32(a.sites.count))
        for site in a.sites.sorted() { out.appendLE(site) }
        out.appendLE(UInt32(a.days.count))
        for (day, d) in a.days.sorted(by: { $0.key < $1.key }) {
            out.appendLE(day)
            out.appendLE(UInt32(d.groups.count))
            for (g, n) in d.groups {
                out.appendLE(g.site)
                out.append(role(g.role))
                out.append((g.accepted ? 1 : 0) | (g.late ? 2 : 0))
                out.appendLE(g.sourceSite)
                out.append(g.sourceID)
                out.appendLE(g.campaign ?? noCampaign)
                out.appendLE(g.destination)
                out.append(g.triggerData)
                out.appendLE(UInt64(n))
            }
            out.appendLE(UInt32(d.totals.count))
            for (k, t) in d.totals {
                owner(k, &out)
                for value in [t.accepted, t.quarantined, t.late, t.withTokens, t.verified] { out.appendLE(UInt64(value)) }
            }
            for campaigns in [d.campaigns, d.verifiedCampaigns] {
                out.appendLE(UInt32(campaigns.count))
                for (k, n) in campaigns {
                    owner(k.owner, &out)
                    out.appendLE(k.sourceSite)
                    out.append(k.sourceID)
                    out.appendLE(k.campaign ?? noCampaign)
                    out.appendLE(UInt64(n))
                }
            }
            for conversions in [d.conversions, d.verifiedConversions] {
                out.appendLE(UInt32(conversions.count))
                for (k, n) in conversions {
                    owner(k.owner, &out)
                    out.appendLE(k.destination)
                    out.append(k.triggerData)
                    out.appendLE(UInt64(n))
                }
            }
            out.appendLE(UInt32(d.quarantineReasons.count))
            for (k, n) in d.quarantineReasons {
                owner(k.owner, &out)
                out.appendLE(k.reason)
                out.appendLE(UInt64(n))
            }
            out.appendLE(UInt32(d.delays.count))
            for (k, n) in d.delays {
                owner(k.owner, &out)
                out.appendLE(UInt32(k.bucket))
                out.appendLE(UInt64(n))
            }
        }
    }

    static func decode(_ r: inout ByteReader) -> SummaryAggregates? {
        guard let nameCount = r.uint32() else { return nil }
        var names: [String] = []
        names.reserveCapacity(Int(min(nameCount, 1 << 20)))
        for _ in 0..<nameCount {
            guard let length = r.uint32(), let bytes = r.bytes(Int(length)), let name = String(validating: bytes, as: UTF8.self) else { return nil }
            names.append(name)
        }
        func name() -> SummaryAggregates.Name? {
            guard let id = r.uint32(), id < names.count else { return nil }
            return id
        }
        func campaign() -> SummaryAggregates.Name?? {
            guard let id = r.uint32() else { return nil }
            if id == noCampaign { return .some(nil) }
            return id < names.count ? .some(id) : nil
        }
        func owner() -> SummaryAggregates.SiteRole? {
            guard let site = name(), let role = r.uint8().flatMap(role(_:)) else { return nil }
            return SummaryAggregates.SiteRole(site: site, role: role)
        }
        func count() -> Int? { r.uint64().flatMap { Int(exactly: $0) } }

        guard let siteCount = r.uint32() else { return nil }
        var sites = Set<SummaryAggregates.Name>()
        for _ in 0..<siteCount {
            guard let site = name() else { return nil }
            sites.insert(site)
        }
        guard let dayCount = r.uint32() else { return nil }
        var days: [Int32: SummaryAggregates.Day] = [:]
        for _ in 0..<dayCount {
            guard let day = r.int32() else { return nil }
            var d = SummaryAggregates.Day()
            guard let groups = r.uint32() else { return nil }
            d.groups.reserveCapacity(Int(min(groups, 1 << 20)))
            for _ in 0..<groups {
                guard let site = name(), let role = r.uint8().flatMap(role(_:)), let flags = r.uint8(), let sourceSite = name(),
                      let sourceID = r.uint8(), let campaign = campaign(), let destination = name(), let triggerData = r.uint8(),
                      let n = count() else { return nil }
                d.groups[SummaryAggregates.Group(site: site, role: role, accepted: flags & 1 != 0, sourceSite: sourceSite, sourceID: sourceID,
                                                 campaign: campaign, destination: destination, triggerData: triggerData, late: flags & 2 != 0)] = n
            }
            guard let totals = r.uint32() else { return nil }
            for _ in 0..<totals {
                guard let k = owner(), let accepted = count(), let quarantined = count(), let late = count(), let withTokens = count(),
                      let verified = count() else { return nil }
                d.totals[k] = SummaryAggregates.Totals(accepted: accepted, quarantined: quarantined, late: late, withTokens: withTokens,
                                                       verified: verified)
            }
            func campaignCounts() -> [SummaryAggregates.CampaignKey: Int]? {
                guard let campaigns = r.uint32() else { return nil }
                var result: [SummaryAggregates.CampaignKey: Int] = [:]
                for _ in 0..<campaigns {
                    guard let k = owner(), let sourceSite = name(), let sourceID = r.uint8(), let campaign = campaign(), let n = count() else { return nil }
                    result[SummaryAggregates.CampaignKey(owner: k, sourceSite: sourceSite, sourceID: sourceID, campaign: campaign)] = n
                }
                return result
            }
            func conversionCounts() -> [SummaryAggregates.ConversionKey: Int]? {
                guard let conversions = r.uint32() else { return nil }
                var result: [SummaryAggregates.ConversionKey: Int] = [:]
                for _ in 0..<conversions {
                    guard let k = owner(), let destination = name(), let triggerData = r.uint8(), let n = count() else { return nil }
                    result[SummaryAggregates.ConversionKey(owner: k, destination: destination, triggerData: triggerData)] = n
                }
                return result
            }
            guard let campaigns = campaignCounts(), let verifiedCampaigns = campaignCounts(),
                  let conversions = conversionCounts(), let verifiedConversions = conversionCounts() else { return nil }
            (d.campaigns, d.verifiedCampaigns, d.conversions, d.verifiedConversions) = (campaigns, verifiedCampaigns, conversions, verifiedConversions)
            guard let reasons = r.uint32() else { return nil }
            for _ in 0..<reasons {
                guard let k = owner(), let reason = name(), let n = count() else { return nil }
                d.quarantineReasons[SummaryAggregates.ReasonKey(owner: k, reason: reason)] = n
            }
            guard let delays = r.uint32() else { return nil }
            for _ in 0..<delays {
                guard let k = owner(), let bucket = r.uint32(), bucket < SummaryAggregates.delayBuckets.count, let n = count() else { return nil }
                d.delays[SummaryAggregates.DelayKey(owner: k, bucket: Int(bucket))] = n
            }
            days[day] = d
        }
        return SummaryAggregates(names: names, days: days, sites: sites)
    }

    private static func role(_ role: ReportRole) -> UInt8 { role == .source ? 0 : 1 }
    private static func role(_ byte: UInt8) -> ReportRole? { byte == 0 ? .source : byte == 1 ? .destination : nil }
    private static func owner(_ owner: SummaryAggregates.SiteRole, _ out: inout [UInt8]) {
        out.appendLE(owner.site)
        out.append(role(owner.role))
    }
}

/// Reads little-endian values off a byte array; nil once the bytes run out.
struct ByteReader {
    private let bytes: [UInt8]
    private let end: Int
    private var offset = 0

    /// Reads `bytes` up to `end` (all of them by default).
    init(_ bytes: [UInt8], end: Int? = nil) {
        self.bytes = bytes
        self.end = end ?? bytes.count
    }

    var isAtEnd: Bool { offset == end }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, end - offset >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func uint8() -> UInt8? {
        guard offset < end else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func load<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard end - offset >= size else { return nil }
        defer { offset += size }
        return bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }

    mutating func uint32() -> UInt32? { load(UInt32.self) }
    mutating func int32() -> Int32? { load(Int32.self) }
    mutating func uint64() -> UInt64? { load(UInt64.self) }
    mutating func int64() -> Int64? { load(Int64.self) }
}
