import Primitives

/// What the owners of derived state (the postback ledger, the trigger ledger, the token sets)
/// took from one sealed segment, each in its own compact form: a start takes a segment's digest
/// instead of reading the segment, so that it reads only the log written since the last seal.
///
/// `digests/<segment base>.digest`, little-endian:
/// `"ATTRDIG1" · u64 base · u64 end · u64 records · u16 sections · (u8 name length · name ·
/// u64 length · bytes)* · u32 CRC-32C of everything before it`.
/// A digest is used only if it is whole and names exactly a kept segment (base, end, records);
/// anything else is read from the segment again.
public struct SegmentDigest: Sendable, Equatable {
    static let magic = Array("ATTRDIG1".utf8)
    /// Past anything a digest holds; a length beyond it is damage.
    static let maxSection = 1 << 34

    public var base: Int
    public var end: Int
    public var records: Int
    /// By owner's name (`SegmentDigestOwner.digestName`).
    public var sections: [String: [UInt8]]

    public init(base: Int, end: Int, records: Int, sections: [String: [UInt8]]) {
        self.base = base
        self.end = end
        self.records = records
        self.sections = sections
    }

    public func describes(_ segment: RecordLog.Segment) -> Bool {
        segment.sealed && segment.base == base && segment.end == end && segment.records == records
    }

    public func encoded() -> [UInt8] {
        var out = Self.magic
        out.appendLE(UInt64(base))
        out.appendLE(UInt64(end))
        out.appendLE(UInt64(records))
        out.appendLE(UInt16(sections.count))
        for name in sections.keys.sorted() {
            let utf8 = Array(name.utf8.prefix(255))
            out.append(UInt8(utf8.count))
            out.append(contentsOf: utf8)
            let bytes = sections[name] ?? []
            out.appendLE(UInt64(bytes.count))
            out.append(contentsOf: bytes)
        }
        out.appendLE(CRC32C.checksum(out))
        return out
    }

    /// The digest `bytes` hold; nil unless they are one whole.
    public static func decode(_ bytes: [UInt8]) -> SegmentDigest? {
        guard bytes.count >= magic.count + 26 + 4, Array(bytes[..<magic.count]) == magic else { return nil }
        let body = bytes.count - 4
        guard bytes.withUnsafeBytes({ CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<body])) }) == bytes.loadLE(UInt32.self, at: body)
        else { return nil }
        var at = magic.count
        func u64() -> UInt64? {
            guard at + 8 <= body else { return nil }
            defer { at += 8 }
            return bytes.loadLE(UInt64.self, at: at)
        }
        guard let base = u64(), let end = u64(), let records = u64(), base <= end, end <= UInt64(1) << 62,
              records <= UInt64(1) << 62, at + 2 <= body else { return nil }
        let count = Int(bytes.loadLE(UInt16.self, at: at))
        at += 2
        var sections: [String: [UInt8]] = [:]
        for _ in 0..<count {
            guard at < body else { return nil }
            let nameLength = Int(bytes[at])
            at += 1
            guard at + nameLength <= body else { return nil }
            let name = String(decoding: bytes[at..<(at + nameLength)], as: UTF8.self)
            at += nameLength
            guard let length = u64(), length <= UInt64(maxSection), at + Int(length) <= body else { return nil }
            sections[name] = Array(bytes[at..<(at + Int(length))])
            at += Int(length)
        }
        guard at == body else { return nil }
        return SegmentDigest(base: Int(base), end: Int(end), records: Int(records), sections: sections)
    }
}

/// An owner of state a start rebuilds from the log: it digests a sealed segment's records into a
/// section of the segment's digest, and takes the section back at start as replay would have
/// taken the records, in log order.
public protocol SegmentDigestOwner: Sendable {
    /// The section's name on disk; a new encoding takes a new name.
    var digestName: String { get }
    /// Whether the section stays once retention removed the segment (counts that outlive their
    /// records): a start takes it from the digests of removed segments too.
    var keptAfterRemoval: Bool { get }
    /// A digester for one segment's records, in order.
    func digester() -> any SegmentDigester
    /// What a section keeps once the owner needs less of it (the postback ledger's, once the
    /// segment's key table is written); nil to keep it as it is.
    func compact(_ bytes: [UInt8], of digest: SegmentDigest) -> [UInt8]?
    /// Reads a section at start; what it returns takes it into the owner's state, called after
    /// the earlier segments' and before any later record. Nil when the section cannot be read:
    /// nothing is taken, and the start reads the log instead.
    func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)?
    /// Reads what a removed segment's digest kept (`keptAfterRemoval`): its section, or one under
    /// an earlier name, which no start can write again once the segment is gone.
    func readRemovedDigest(_ sections: [String: [UInt8]], of digest: SegmentDigest) -> (@Sendable () -> Void)?
}

extension SegmentDigestOwner {
    public var keptAfterRemoval: Bool { false }
    public func compact(_ bytes: [UInt8], of digest: SegmentDigest) -> [UInt8]? { nil }
    public func readRemovedDigest(_ sections: [String: [UInt8]], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        sections[digestName].flatMap { readDigest($0, of: digest) }
    }
}

public protocol SegmentDigester {
    mutating func take(_ record: RecordLog.RecordView)
    func finish() -> [UInt8]
}
