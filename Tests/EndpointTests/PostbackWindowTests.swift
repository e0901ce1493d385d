import Foundation
import Locking
import Postbacks
import Primitives
import RawHTTPClient
import RecordLog
import Testing
@testable import Demo
@testable import Endpoint

/// `--postback-window-days`: postbacks leave the ledger's memory once their devices have stopped
/// retrying, and a copy that comes later still is found in its segment's key table, over real
/// HTTP, before and after a restart.
@Suite(.serialized) struct PostbackWindowTests {
    static let path = DemoPostbacks.adattributionkitPath

    /// An AdAttributionKit postback signed with the demo key; `n` names it, `value` is unsigned.
    /// A signature is new each time it is made, so each body is made once: a device resends the
    /// very bytes it sent.
    static func postback(_ n: Int, value: Int = 7) -> [UInt8] {
        bodies.withLock { made in
            if let body = made[n * 100 + value] { return body }
            let body = makePostback(n, value: value)
            made[n * 100 + value] = body
            return body
        }
    }
    private static let bodies = Locked<[Int: [UInt8]]>([:])

    private static func makePostback(_ n: Int, value: Int) -> [UInt8] {
        let payload = #"{"impression-type":"app-impression","ad-network-identifier":"demo.adattributionkit","source-identifier":"5678","advertised-item-identifier":\#(DemoPostbacks.appID),"conversion-type":"download","postback-identifier":"\#(DemoPostbacks.uuid(n))","did-win":true,"postback-sequence-index":0,"marketplace-identifier":"com.apple.AppStore"}"#
        return Array(#"{"jws-string":"\#(DemoPostbacks.jws(payload))","ad-interaction-type":"click","conversion-value":\#(value)}"#.utf8)
    }

    static func start(_ directory: String, signatureThreads: Int, at time: String) throws -> LiveEndpoint {
        try LiveEndpoint(sites: ["app.example"], directory: directory, startingAt: time) { c in
            // The days below are laid out for a 12-day window (the default is 10).
            c.postbackWindowDays = 12
            c.signatureThreads = signatureThreads
            c.postbackKeys = [(DemoPostbacks.keyName, DemoPostbacks.keySPKI)]
        }.waitingForTheStartSweep()
    }

    static func send(_ endpoint: LiveEndpoint, _ body: [UInt8]) throws -> [String: Any] {
        let response = try httpRequest(port: endpoint.port, method: "POST", path: path, host: "app.example", body: body)
        #expect(response.status == 200, "\(response.bodyText)")
        return json(response)
    }

    /// Each stored postback's id, verdict, reasons and retries, as the export says.
    static func rows(_ endpoint: LiveEndpoint) throws -> [String] {
        try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").map { line in
            let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            return "\(row["id"]!) \(row["verdict"]!) \(row["reasons"]!) \(row["duplicates_received"]!)"
        }
    }

    static func appsSummary(_ endpoint: LiveEndpoint) throws -> String {
        try endpoint.get("/api/apps/summary?site=app.example&from=2026-10-01&to=2026-12-31").bodyText
    }

    @Test(arguments: [0, 1]) func keysLeaveMemoryAndALateCopyIsStillARetry(signatureThreads: Int) throws {
        let directory = temporaryDirectory()
        var endpoint = try Self.start(directory, signatureThreads: signatureThreads, at: "2026-11-01T10:00:00Z")
        var ids: [Int: Int] = [:]
        for n in 1...40 { ids[n] = try Self.send(endpoint, Self.postback(n))["id"] as? Int }
        // Devices' retries the same day, counted once each.
        for n in [3, 3, 17] { #expect(try Self.send(endpoint, Self.postback(n))["retry"] as? Bool == true) }
        // A later day's first postback seals the first day's segment.
        endpoint.clock.set("2026-11-03T10:00:00Z")
        ids[41] = try Self.send(endpoint, Self.postback(41))["id"] as? Int
        let window = endpoint.server.postbackWindow
        #expect(window.ledger.keysInMemory == 41)
        // Within the window nothing leaves.
        #expect(window.sweep().isEmpty)
        let rowsBefore = try Self.rows(endpoint)
        let summaryBefore = try Self.appsSummary(endpoint)

        // Past the window: the first day's 40 postbacks go to their table; the later day's stays.
        endpoint.clock.set("2026-11-14T11:00:00Z")
        let written = window.sweep()
        #expect(written.count == 1 && written[0].keys == 40)
        #expect(window.ledger.keysInMemory == 1)
        #expect(window.tabledThrough == written[0].segmentEnd)
        // The exports and the summary say what they said.
        #expect(try Self.rows(endpoint) == rowsBefore)
        #expect(try Self.appsSummary(endpoint) == summaryBefore)

        // A late copy of postback 3 is its retry, not a new postback; a postback under 5's key
        // with other content is a conflict; a new one is new.
        let late = try Self.send(endpoint, Self.postback(3))
        #expect(late["retry"] as? Bool == true && late["id"] as? Int == ids[3])
        let conflict = try Self.send(endpoint, Self.postback(5, value: 9))
        #expect(conflict["verdict"] as? String == "quarantined")
        #expect((conflict["reasons"] as? [String])?.contains("conflicting_duplicate") == true)
        #expect(try Self.send(endpoint, Self.postback(42))["verdict"] as? String == "accepted")
        #expect(window.ledger.foundOnDisk == 2)
        let rowsAfter = try Self.rows(endpoint)
        #expect(rowsAfter.contains("\(ids[3]!) accepted [] 3"))
        #expect(rowsAfter.count == 43)
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_postback_found_on_disk_total 2\n"))
        endpoint.stop()

        // A restart keeps the first day's postbacks on disk and still knows them.
        endpoint = try Self.start(directory, signatureThreads: signatureThreads, at: "2026-11-14T12:00:00Z")
        #expect(endpoint.server.postbackWindow.ledger.keysInMemory == 3)
        #expect(try Self.rows(endpoint) == rowsAfter)
        #expect(try Self.send(endpoint, Self.postback(17))["id"] as? Int == ids[17])
        #expect(try Self.send(endpoint, Self.postback(3))["retry"] as? Bool == true)
        let rowsRestarted = try Self.rows(endpoint)
        #expect(rowsRestarted.contains("\(ids[3]!) accepted [] 4"))
        #expect(rowsRestarted.contains("\(ids[17]!) accepted [] 2"))
        endpoint.stop()

        // A table that is not whole is never trusted: the start reads its postbacks again from
        // the log, and writes their table anew, every retry counted.
        let table = directory + "/postback-keys/\(written[0].segmentBase).keys"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: table)))
        bytes[bytes.count - 9] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: table))
        endpoint = try Self.start(directory, signatureThreads: signatureThreads, at: "2026-11-14T13:00:00Z")
        #expect(endpoint.server.postbackWindow.archive.discarded == [table])
        #expect(endpoint.server.postbackWindow.archive.tables.count == 1)
        #expect(endpoint.server.postbackWindow.ledger.keysInMemory == 3)
        #expect(try Self.rows(endpoint) == rowsRestarted)
        #expect(try Self.send(endpoint, Self.postback(3))["retry"] as? Bool == true)
        #expect(try Self.rows(endpoint).contains("\(ids[3]!) accepted [] 5"))
        endpoint.stop()
    }

    /// A restored node's ids jump to the floor; a key table counts every id of its segment, so
    /// the restore begins a segment of its own and both sides get their tables, as sparse ids
    /// would have had the window thread size one by the jump (seen: a 7.5 PB allocation, then a
    /// crash at every start).
    @Test func aRestoredNodesPostbacksGoToKeyTablesOnBothSidesOfTheFloor() throws {
        let directory = temporaryDirectory()
        var endpoint = try Self.start(directory, signatureThreads: 0, at: "2026-11-01T10:00:00Z")
        var ids: [Int: Int] = [:]
        for n in 1...10 { ids[n] = try Self.send(endpoint, Self.postback(n))["id"] as? Int }
        endpoint.stop()
        let backup = temporaryDirectory() + "/backup", restored = temporaryDirectory() + "/restored"
        let at = Timestamp(rfc3339: "2026-11-01T11:00:00Z")!
        try BackupCommand.backUp(directory, to: backup, at: at)
        let manifest = try RestoreCommand.restore(backup, into: restored, at: at)
        let floor = try #require(manifest.idFloor)

        endpoint = try Self.start(restored, signatureThreads: 0, at: "2026-11-01T12:00:00Z")
        for n in 11...20 { ids[n] = try Self.send(endpoint, Self.postback(n))["id"] as? Int }
        #expect(ids[11].map { UInt64($0) >= floor } == true)
        #expect(try Self.send(endpoint, Self.postback(3))["retry"] as? Bool == true)
        endpoint.clock.set("2026-11-03T10:00:00Z")
        ids[21] = try Self.send(endpoint, Self.postback(21))["id"] as? Int
        endpoint.clock.set("2026-11-16T10:00:00Z")
        let written = endpoint.server.postbackWindow.sweep()
        #expect(written.map(\.keys) == [10, 10])
        #expect(endpoint.server.postbackWindow.ledger.keysInMemory == 1)
        // Late copies on either side are found in their tables, as retries of the same postbacks.
        let early = try Self.send(endpoint, Self.postback(4)), late = try Self.send(endpoint, Self.postback(15))
        #expect(early["retry"] as? Bool == true && early["id"] as? Int == ids[4])
        #expect(late["retry"] as? Bool == true && late["id"] as? Int == ids[15])
        endpoint.stop()
    }
}

extension PostbackWindowTests {
    /// A key block that does not read back as written is an error, never a miss: the copy it may
    /// hide is answered 503 (the device sends it again), not stored twice. Deleting the table has
    /// the next start read its postbacks from the log again.
    @Test func aKeyTableThatCannotBeReadAnswers503() throws {
        let directory = temporaryDirectory()
        var endpoint = try Self.start(directory, signatureThreads: 1, at: "2026-11-01T10:00:00Z")
        for n in 1...5 { _ = try Self.send(endpoint, Self.postback(n)) }
        endpoint.clock.set("2026-11-03T10:00:00Z")
        _ = try Self.send(endpoint, Self.postback(6))
        endpoint.clock.set("2026-11-14T11:00:00Z")
        let table = try #require(endpoint.server.postbackWindow.sweep().first)
        // A byte of the only key block, which the table's own checksum does not cover.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: table.path)))
        bytes[PostbackKeyTable.headerSize + 4 * table.ids + 3] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: table.path))
        let late = try httpRequest(port: endpoint.port, method: "POST", path: Self.path, host: "app.example", body: Self.postback(2))
        #expect(late.status == 503 && late.bodyText.contains("postback_keys_unreadable"), "\(late.bodyText)")
        #expect(late.headers.contains { $0.name.lowercased() == "retry-after" })
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_postback_key_table_errors_total 1\n"))
        #expect(try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").count == 6)
        endpoint.stop()

        try FileManager.default.removeItem(atPath: table.path)
        endpoint = try Self.start(directory, signatureThreads: 1, at: "2026-11-14T12:00:00Z")
        defer { endpoint.stop() }
        #expect(try Self.send(endpoint, Self.postback(2))["retry"] as? Bool == true)
        #expect(try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").count == 6)
    }
}

extension LiveEndpoint {
    /// Once the digests' and the window's sweeps at start are done, so that what memory holds
    /// and what the next start reads are settled.
    func waitingForTheStartSweep() -> LiveEndpoint {
        // The threads that sweep start once the postback ledger is whole.
        server.waitUntilPostbacksReady()
        server.waitUntilAppleAdsReady()
        server.digests.waitUntilStartSwept()
        server.postbackWindow.waitUntilStartSwept()
        // The sites of each segment are read once after a start: until then the segment being
        // read is pinned, and retention leaves it and every later one for its next sweep.
        server.segmentSites.waitUntilStartSwept()
        return self
    }
}
