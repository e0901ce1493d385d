/// What a record is, as its owner declares it: the number the log keeps in each record's header
/// and a name for people. The store knows no kind by name, and treats every kind alike (ids,
/// counts, the time index); owners declare theirs beside their codecs (`RecordKind.report` in
/// `PCMRecords`, `.postback` in `Postbacks`, `.appleAdsToken` in `AppleAdsRecords`).
///
/// Numbers in use: 1 report, 2 trigger, 3 postback, 4 postback retry, 5 Apple Ads token, 6 Apple
/// Ads call. A number once written is never given to another kind: old logs keep it.
public struct RecordKind: Sendable, Hashable, CustomStringConvertible {
    public let number: UInt8
    /// Static, so that passing a kind along every append costs no reference count.
    public let name: StaticString

    public init(_ number: UInt8, name: StaticString) {
        self.number = number
        self.name = name
    }

    public static func == (a: RecordKind, b: RecordKind) -> Bool { a.number == b.number }
    public func hash(into hasher: inout Hasher) { hasher.combine(number) }
    public var description: String { "\(name)" }
}
