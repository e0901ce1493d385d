import Primitives
import RecordLog

/// What the ledger takes from a sealed segment, about 50 bytes a postback and 17 a retry instead of
/// the records themselves (a postback's body is most of the log): a start takes the window's
/// postbacks from these and reads only the log written since the last seal.
///
/// A byte saying what follows: 0, every entry; 1, what is left once the segment's key table is
/// written (`compact`), then `u16 count · u64 segment base*` of the other tables whose counts it
/// relied on: read only while this segment's table and those are there. Then entries in log order:
/// `1 · u64 id · u64 key hash (disk) · u64 key hash (other) · u64 content hash · u8 verified ·
/// i32 day · u8 length · site` (the postback's origin), or `2 · u64 postback id · u64 retry
/// record's end`.
extension PostbackLedger: SegmentDigestOwner {
    public var digestName: String { "postback-ledger-2" }

    public func digester() -> any SegmentDigester { Digester() }

    struct Digester: SegmentDigester {
        var out: [UInt8] = [0]

        mutating func take(_ view: RecordLog.RecordView) {
            if view.kind == RecordKind.postback.number, let stored = StoredPostback.decode(view) {
                let key = DuplicateKeyHash(stored.draft.duplicateKey)
                out.append(1)
                out.appendLE(stored.id)
                out.appendLE(key.disk)
                out.appendLE(key.other)
                out.appendLE(stored.draft.contentHash)
                out.append(stored.draft.signature.isVerified ? 1 : 0)
                out.appendLE(stored.receivedAt.day)
                let site = Array(stored.draft.site.utf8.prefix(255))
                out.append(UInt8(site.count))
                out.append(contentsOf: site)
            } else if view.kind == RecordKind.postbackRetry.number, view.payload.count >= 8 {
                out.append(2)
                out.appendLE(view.payload.loadLE(UInt64.self, at: 0))
                out.appendLE(UInt64(view.end))
            }
        }

        func finish() -> [UInt8] { out }
    }

    private enum Entry {
        case postback(id: UInt64, key: DuplicateKeyHash, contentHash: UInt64, verified: Bool, origin: PostbackOrigin)
        case retry(of: UInt64, end: Int)
    }

    public func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        guard let form = bytes.first, form <= 1 else { return nil }
        var at = 1
        if form == 1 {
            guard let archive, archive.hasTable(forSegment: digest.base), bytes.count >= 3 else { return nil }
            let count = Int(bytes.loadLE(UInt16.self, at: 1))
            guard bytes.count >= 3 + 8 * count else { return nil }
            for i in 0..<count {
                let base = bytes.loadLE(UInt64.self, at: 3 + 8 * i)
                guard base <= UInt64(1) << 62, archive.hasTable(forSegment: Int(base)) else { return nil }
            }
            at = 3 + 8 * count
        }
        var entries: [Entry] = []
        while at < bytes.count {
            switch bytes[at] {
            case 1 where at + 39 <= bytes.count && at + 39 + Int(bytes[at + 38]) <= bytes.count:
                let key = DuplicateKeyHash(disk: bytes.loadLE(UInt64.self, at: at + 9), other: bytes.loadLE(UInt64.self, at: at + 17))
                let length = Int(bytes[at + 38])
                let origin = PostbackOrigin(day: bytes.loadLE(Int32.self, at: at + 34),
                                            site: String(decoding: bytes[(at + 39)..<(at + 39 + length)], as: UTF8.self))
                entries.append(.postback(id: bytes.loadLE(UInt64.self, at: at + 1), key: key,
                                         contentHash: bytes.loadLE(UInt64.self, at: at + 25), verified: bytes[at + 33] == 1, origin: origin))
                at += 39 + length
            case 2 where at + 17 <= bytes.count:
                let end = bytes.loadLE(UInt64.self, at: at + 9)
                guard end <= UInt64(1) << 62 else { return nil }
                entries.append(.retry(of: bytes.loadLE(UInt64.self, at: at + 1), end: Int(end)))
                at += 17
            default:
                return nil
            }
        }
        return { [entries] in
            for entry in entries {
                switch entry {
                case .postback(let id, let key, let contentHash, let verified, let origin):
                    self.takePostback(id: id, key: key, contentHash: contentHash, verified: verified, origin: origin)
                case .retry(let original, let end):
                    self.takeRetry(of: original, end: end)
                }
            }
        }
    }
}

extension PostbackLedger {
    /// Once the segment's key table is written its postbacks are taken from the table, and so are
    /// the retries that the tables of their postbacks counted (this segment's, or an earlier one's,
    /// named in the section): what is left are retries counted after their postback's table was
    /// written (late ones), which replay counts again. A year of segments then costs a start a few
    /// bytes each.
    public func compact(_ bytes: [UInt8], of digest: SegmentDigest) -> [UInt8]? {
        guard let archive, archive.hasTable(forSegment: digest.base), bytes.first == 0 else { return nil }
        var kept: [UInt8] = []
        var reliedOn: Set<Int> = []
        var at = 1
        while at < bytes.count {
            switch bytes[at] {
            case 1 where at + 39 <= bytes.count && at + 39 + Int(bytes[at + 38]) <= bytes.count:
                at += 39 + Int(bytes[at + 38])
            case 2 where at + 17 <= bytes.count:
                let original = bytes.loadLE(UInt64.self, at: at + 1), end = bytes.loadLE(UInt64.self, at: at + 9)
                if let table = archive.table(covering: original), end <= UInt64(table.retriesThrough) {
                    // Counted in that table, which must then be there when this is read.
                    reliedOn.insert(table.segmentBase)
                } else {
                    kept.append(contentsOf: bytes[at..<(at + 17)])
                }
                at += 17
            default:
                return nil
            }
        }
        var out: [UInt8] = [1]
        out.appendLE(UInt16(min(reliedOn.count, Int(UInt16.max))))
        for base in reliedOn.sorted().prefix(Int(UInt16.max)) { out.appendLE(UInt64(base)) }
        return out + kept
    }
}
