import Primitives
import ReportStore

/// What the ledger takes from a sealed segment, 34 bytes a postback and 17 a retry instead of
/// the records themselves (a postback's body is most of the log): a start takes the window's
/// postbacks from these and reads only the log written since the last seal.
///
/// A byte saying what follows: 0, every entry; 1, what is left once the segment's key table is
/// written (`compact`), which is read only while that table is there. Then entries in log order:
/// `1 · u64 id · u64 key hash (disk) · u64 key hash (other) · u64 content hash · u8 verified`, or
/// `2 · u64 postback id · u64 retry record's end`.
extension PostbackLedger: SegmentDigestOwner {
    public var digestName: String { "postback-ledger-1" }

    public func digester() -> any SegmentDigester { Digester() }

    struct Digester: SegmentDigester {
        var out: [UInt8] = [0]

        mutating func take(_ view: ReportStore.RecordView) {
            if view.kind == RecordKind.postback.number, let stored = StoredPostback.decode(view) {
                let key = DuplicateKeyHash(stored.draft.duplicateKey)
                out.append(1)
                out.appendLE(stored.id)
                out.appendLE(key.disk)
                out.appendLE(key.other)
                out.appendLE(stored.draft.contentHash)
                out.append(stored.draft.signature.isVerified ? 1 : 0)
            } else if view.kind == RecordKind.postbackRetry.number, view.payload.count >= 8 {
                out.append(2)
                out.appendLE(view.payload.loadLE(UInt64.self, at: 0))
                out.appendLE(UInt64(view.end))
            }
        }

        func finish() -> [UInt8] { out }
    }

    private enum Entry {
        case postback(id: UInt64, key: DuplicateKeyHash, contentHash: UInt64, verified: Bool)
        case retry(of: UInt64, end: Int)
    }

    public func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        guard let form = bytes.first, form == 0 || (form == 1 && archive?.hasTable(forSegment: digest.base) == true) else { return nil }
        var entries: [Entry] = []
        var at = 1
        while at < bytes.count {
            switch bytes[at] {
            case 1 where at + 34 <= bytes.count:
                let key = DuplicateKeyHash(disk: bytes.loadLE(UInt64.self, at: at + 9), other: bytes.loadLE(UInt64.self, at: at + 17))
                entries.append(.postback(id: bytes.loadLE(UInt64.self, at: at + 1), key: key,
                                         contentHash: bytes.loadLE(UInt64.self, at: at + 25), verified: bytes[at + 33] == 1))
                at += 34
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
                case .postback(let id, let key, let contentHash, let verified):
                    self.takePostback(id: id, key: key, contentHash: contentHash, verified: verified)
                case .retry(let original, let end):
                    self.takeRetry(of: original, end: end)
                }
            }
        }
    }
}

extension PostbackLedger {
    /// Once the segment's key table is written its postbacks are taken from the table, and so are
    /// the retries it counted: what is left are retries counted after their postback's table was
    /// written (late ones), which replay counts again. A year of segments then costs a start a few
    /// bytes each.
    public func compact(_ bytes: [UInt8], of digest: SegmentDigest) -> [UInt8]? {
        guard let archive, archive.hasTable(forSegment: digest.base), bytes.first == 0 else { return nil }
        var kept: [UInt8] = [1]
        var at = 1
        while at < bytes.count {
            switch bytes[at] {
            case 1 where at + 34 <= bytes.count:
                at += 34
            case 2 where at + 17 <= bytes.count:
                let original = bytes.loadLE(UInt64.self, at: at + 1), end = bytes.loadLE(UInt64.self, at: at + 9)
                if let table = archive.table(covering: original), end <= UInt64(table.retriesThrough) {
                    // Counted in the table.
                } else {
                    kept.append(contentsOf: bytes[at..<(at + 17)])
                }
                at += 17
            default:
                return nil
            }
        }
        return kept
    }
}
