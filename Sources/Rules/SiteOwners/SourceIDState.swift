import Primitives

/// One of a source site's 256 ids at a moment: what the id picker shows.
public struct SourceIDState: Sendable, Equatable {
    public var sourceID: UInt8
    /// The campaign that holds it now, in its period or in the days its reports can still come.
    public var holder: Campaign?
    /// The campaign registered to take it later, if any.
    public var next: Campaign?

    public init(sourceID: UInt8, holder: Campaign?, next: Campaign?) {
        self.sourceID = sourceID
        self.holder = holder
        self.next = next
    }

    public var isFree: Bool { holder == nil }
    /// When it is free again: nil when free now, or held with no end.
    public var freeFrom: Timestamp? { holder?.busyUntil.map { $0.adding(milliseconds: 1) } }
}
