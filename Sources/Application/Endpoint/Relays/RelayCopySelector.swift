import Foundation
import PCMRecords
import Postbacks
import Primitives
import RecordLog
import Relaying
import Relays

/// Which records a destination takes, as copies: postbacks of its protocols (an app's, or every
/// app's sent to its site), accepted ones unless it takes all, development-signed ones and those
/// of the app's development URL only if it asked; and a site's PCM reports if it asked for them. Each goes with its body and
/// `Content-Type` as they came (`application/json` for a record written before the type was kept,
/// which is what devices and browsers send).
enum RelayCopySelector {
    static let defaultContentType = "application/json"

    static func select(for destination: RelayDestination) -> @Sendable (RecordLog.RecordView) -> RelayCopy? {
        let takesPostbacks = destination.protocols.contains(.skadnetwork) || destination.protocols.contains(.adattributionkit)
        let takesReports = destination.protocols.contains(.pcm)
        return { record in
            if takesPostbacks, record.kind == RecordKind.postback.number { return postback(record, destination) }
            if takesPostbacks, destination.development, record.kind == RecordKind.developmentPostback.number {
                return developmentPostback(record, destination)
            }
            if takesReports, record.kind == RecordKind.report.number { return report(record, destination) }
            return nil
        }
    }

    private static func postback(_ record: RecordLog.RecordView, _ destination: RelayDestination) -> RelayCopy? {
        // Cheap refusals first: most records are another site's when the destination is a site's.
        if let site = destination.site, StoredPostback.site(of: record) != site { return nil }
        guard let stored = StoredPostback.decode(record) else { return nil }
        let proto: RelayProtocol = stored.protocol == .skadnetwork ? .skadnetwork : .adattributionkit
        let facts = AppsSummary.Facts(stored)
        guard destination.takes(proto, site: stored.draft.site, appID: facts.appID.flatMap { Int($0) },
                                accepted: facts.accepted, development: facts.development) else { return nil }
        return RelayCopy(recordID: stored.id, receivedAt: stored.receivedAt, protocolName: proto.rawValue,
                         contentType: stored.draft.contentType ?? defaultContentType, body: stored.draft.body)
    }

    /// A development URL's postback: for its app's (or its site's) destination, only if it asked
    /// for development postbacks; taken whether or not the production paths would accept it.
    private static func developmentPostback(_ record: RecordLog.RecordView, _ destination: RelayDestination) -> RelayCopy? {
        guard let stored = StoredDevelopmentPostback.decode(record) else { return nil }
        let proto: RelayProtocol = stored.draft.protocol == .skadnetwork ? .skadnetwork : .adattributionkit
        guard destination.takes(proto, site: stored.draft.site, appID: stored.appID, accepted: true, development: true) else { return nil }
        return RelayCopy(recordID: stored.id, receivedAt: stored.receivedAt, protocolName: proto.rawValue,
                         contentType: stored.draft.contentType ?? defaultContentType, body: stored.draft.body)
    }

    private static func report(_ record: RecordLog.RecordView, _ destination: RelayDestination) -> RelayCopy? {
        var strings = InternedStrings()
        guard let stored = StoredReport.decode(record, strings: &strings) else { return nil }
        // The site it was sent to: the click's for the source's report, the conversion's for the other.
        guard case .object(let members)? = try? JSONParser().parse(stored.body),
              case .string(let site)? = members.first(where: { $0.key == (stored.role == .source ? "source_site" : "attributed_on_site") })?.value,
              destination.takes(.pcm, site: site, appID: nil, accepted: stored.verdict == .accepted, development: false) else { return nil }
        return RelayCopy(recordID: stored.id, receivedAt: stored.receivedAt, protocolName: RelayProtocol.pcm.rawValue,
                         contentType: defaultContentType, body: stored.body)
    }
}
