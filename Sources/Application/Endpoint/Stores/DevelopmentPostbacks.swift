import Dispatch
import DurableFiles
import Foundation
import Locking
import Postbacks
import Primitives

/// Each app's last development postbacks: what its development path took (kept in the log as
/// `development_postback` records, apart from the postbacks), and the copies signed with one of
/// Apple's development keys that came to the production paths (stored as postbacks, as before):
/// what the setup view shows; never in a count.
///
/// At most `perApp` per app, newest last, for at most `maxApps` apps (the production paths' only
/// for registered apps, and `0` for Xcode builds, whose `advertised-item-identifier` is 0), kept in
/// memory and in `DATA/development/APPID.json`, replaced whole by a thread of its own: an app's
/// file is written once for however many entries came while the last write ran.
final class DevelopmentPostbacks: Sendable {
    struct Entry: Codable, Sendable, Equatable {
        /// Milliseconds since 1970.
        var receivedAt: Int64
        /// `development` (the app's development path) or `production` (a well-known path).
        var path: String
        var proto: String
        /// The body as it came, as text.
        var body: String
        /// What the signature check said (`SignatureOutcome.name`).
        var signature: String

        enum CodingKeys: String, CodingKey { case receivedAt = "received_at", path, proto = "protocol", body, signature }
    }

    static let perApp = 50
    static let maxApps = 1_000
    static let maxPending = 256

    let directory: String
    private let entries: Locked<[Int: [Entry]]>
    private let writer = DispatchQueue(label: "development-postbacks", qos: .utility)
    private let pending = Locked((waiting: 0, leftOut: 0))
    /// Apps whose list changed since its file was last written.
    private let dirty = Locked(Set<Int>())

    /// Whether a production path's postback for this app is noted: registered apps and Xcode builds (0).
    private let knows: @Sendable (Int) -> Bool

    init(directory: String, knows: @escaping @Sendable (Int) -> Bool = { _ in true }) throws {
        self.directory = directory
        self.knows = knows
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var loaded: [Int: [Entry]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasSuffix(".json") {
            guard let app = Int(name.dropLast(5)), loaded.count < Self.maxApps else { continue }
            let file = DurableJSONFile<[Entry]>(path: directory + "/" + name, empty: [])
            // One unreadable file costs its app its history, not the start.
            if let list = try? file.load() { loaded[app] = Array(list.suffix(Self.perApp)) }
        }
        entries = Locked(loaded)
    }

    /// The app's entries, oldest first.
    func list(appID: Int) -> [Entry] { entries.withLock { $0[appID] ?? [] } }

    /// Keeps an entry (a development path's postback, its record already in the log): in memory
    /// at once, on disk soon.
    func remember(appID: Int, _ entry: Entry) {
        let kept = entries.withLock { all -> Bool in
            guard all[appID] != nil || all.count < Self.maxApps else { return false }
            all[appID] = Array(((all[appID] ?? []) + [entry]).suffix(Self.perApp))
            return true
        }
        guard kept else { return leftOut("more than \(Self.maxApps) apps") }
        save(appID)
    }

    /// Notes a production path's development postback, on the notes' thread, under the app its
    /// body names (`app-id`, `advertised-item-identifier`; 0 for an Xcode build).
    func note(_ proto: AttributionProtocol, body: [UInt8], at time: Timestamp, signature: SignatureOutcome) {
        let admitted = pending.withLock { p -> Bool in
            guard p.waiting < Self.maxPending else { return false }
            p.waiting += 1
            return true
        }
        guard admitted else { return leftOut("\(Self.maxPending) notes waiting") }
        writer.async { [self] in
            defer { pending.withLock { $0.waiting -= 1 } }
            let named = PostbackFields(proto, body: body).value(proto == .skadnetwork ? "app-id" : "advertised-item-identifier")
            guard case .number(let digits)? = named, let appID = Int(digits), appID >= 0, knows(appID) else { return }
            remember(appID: appID, Entry(receivedAt: time.millisecondsSinceEpoch, path: "production", proto: proto.name,
                                         body: String(decoding: body, as: UTF8.self), signature: signature.name))
        }
    }

    /// A note not kept (its postback is in the log all the same): said, with how many so far.
    private func leftOut(_ why: String) {
        let count = pending.withLock { p -> Int in
            p.leftOut += 1
            return p.leftOut
        }
        EventLog.write("development_postback_not_noted", ["reason": .string(why), "left_out": .number(String(count))])
    }

    /// Writes the app's list as it stands when the thread gets to it; one write for the entries
    /// that came meanwhile.
    private func save(_ appID: Int) {
        let first = dirty.withLock { $0.insert(appID).inserted }
        guard first else { return }
        writer.async { [self] in
            _ = dirty.withLock { $0.remove(appID) }
            let list = entries.withLock { $0[appID] ?? [] }
            do { try DurableJSONFile<[Entry]>(path: directory + "/\(appID).json", empty: []).save(list) } catch {
                EventLog.write("development_postbacks_not_saved", ["app_id": .number(String(appID)), "error": .string("\(error)")])
            }
        }
    }

    /// Waits until every note handed to the thread is on disk (tests, a stop).
    func drain() {
        repeat { writer.sync {} } while dirty.withLock({ !$0.isEmpty }) || pending.withLock({ $0.waiting > 0 })
    }
}
