import Primitives

/// One copy a destination takes, as the application picks it out of a record: the body and
/// `Content-Type` exactly as the device (or browser) sent them, and what the headers say of it.
public struct RelayCopy: Sendable, Equatable {
    /// The record's id: with the node and the destination, what the delivery id is made from.
    public var recordID: UInt64
    /// When the endpoint received it.
    public var receivedAt: Timestamp
    /// `skadnetwork`, `adattributionkit` or `pcm`.
    public var protocolName: String
    public var contentType: String
    public var body: [UInt8]

    public init(recordID: UInt64, receivedAt: Timestamp, protocolName: String, contentType: String, body: [UInt8]) {
        self.recordID = recordID
        self.receivedAt = receivedAt
        self.protocolName = protocolName
        self.contentType = contentType
        self.body = body
    }
}
