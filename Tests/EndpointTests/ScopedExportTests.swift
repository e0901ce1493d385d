import Foundation
import PCMRecords
import Primitives
import Testing
@testable import Demo
@testable import Endpoint

/// A scoped export costs the segments that concern it, not the log: each sealed segment says which
/// sites it holds (`SegmentSites`), and the store never opens one that holds none of the scope's
/// sites, nor one without a record of the kind read.
@Suite(.serialized) struct ScopedExportTests {
    @Test func aScopedExportOpensOnlyTheSegmentsThatHoldItsSites() throws {
        let endpoint = try LiveEndpoint(sites: Demo.sites + ["quiet.example"]) { $0.manualClock = true }
        defer { endpoint.stop() }
        try Demo.drive(port: endpoint.port, token: "test-token")
        // The demo registers acme (shop.example, app.example) and news (news.example).
        let quiet = #"{"id":"quiet","name":"Quiet Ltd","sites":["quiet.example"]}"#
        #expect(endpoint.request("POST", "/api/advertisers", headers: AccessTests.admin, body: Array(quiet.utf8)).status == 201)
        let sealed = endpoint.server.store.segments.filter(\.sealed)
        #expect(sealed.count >= 20)
        endpoint.server.segmentSites.sweep()
        #expect(endpoint.server.segmentSites.count == sealed.count)
        let store = endpoint.server.store

        // An advertiser with nothing: no sealed segment is opened, for either export or format.
        for path in ["/api/reports", "/api/reports.csv", "/api/postbacks", "/api/postbacks.csv"] {
            let before = store.segmentsRead
            let response = try endpoint.get(path + "?advertiser=quiet")
            #expect(response.status == 200)
            #expect(response.bodyText.split(separator: "\n").count == (path.hasSuffix(".csv") ? 1 : 0), "\(path)")
            // The active segment alone, where it holds a record of the kind.
            #expect(store.segmentsRead - before <= 1, "\(path) opened \(store.segmentsRead - before) segments")
        }
        // Postbacks go to app.example alone: the publisher's postback export opens no sealed
        // segment; its report export holds exactly the rows the admin's has for its site.
        let before = store.segmentsRead
        let newsPostbacks = try endpoint.get("/api/postbacks?advertiser=news")
        #expect(newsPostbacks.status == 200 && newsPostbacks.bodyText.isEmpty)
        #expect(store.segmentsRead - before <= 1)
        let everything = try endpoint.export()
        let news = try endpoint.export("?advertiser=news")
        #expect(!news.isEmpty)
        #expect(news.map { $0["id"] as? Int } == everything.filter { $0["site"] as? String == "news.example" }.map { $0["id"] as? Int })
        // The active segment is described as far as the sweep read it: a scoped reader starts
        // after that, and still sees what came since.
        let active = try #require(store.segments.last)
        let skip = endpoint.server.segmentSites.skipping(.report, unless: ["quiet.example"])
        #expect((skip(active.base) ?? 0) > active.base)
        #expect(endpoint.server.segmentSites.skipping(.report, unless: ["news.example"])(active.base) == nil)
        let stored = try endpoint.post(reportBody(sourceSite: "quiet.example", destination: "shop.example"), host: "quiet.example")
        #expect(stored.status == 201, "\(stored.bodyText)")
        let quietRows = try endpoint.export("?advertiser=quiet")
        #expect(quietRows.map { $0["id"] as? Int } == [json(stored)["id"] as? Int])
        endpoint.server.segmentSites.sweep()
        #expect(try endpoint.export("?advertiser=quiet").count == 1, "once described, the new report is in the description")
        // After a restart the descriptions are read back, not made again.
        let segmentsDescribed = endpoint.server.segmentSites.count
        let again = try SegmentSites(directory: endpoint.directory + "/segment-sites", store: store,
                                     kinds: [.init(ReportExportCodec())])
        #expect(again.count == segmentsDescribed)
    }

    @Test func aSegmentWithoutTheKindIsNeverOpened() throws {
        let endpoint = try LiveEndpoint(sites: Demo.sites, startingAt: "2026-10-01T00:00:00Z") { $0.manualClock = true }
        defer { endpoint.stop() }
        // Twenty days of reports alone: the postback export opens none of their segments.
        for day in 2...21 {
            let now = "2026-10-\(day < 10 ? "0" : "")\(day)T12:00:00Z"
            endpoint.clock.set(now)
            #expect(endpoint.request("POST", "/admin/clock", headers: AccessTests.admin, body: Array("{\"now\":\"\(now)\"}".utf8)).status < 300)
            #expect(try endpoint.post(reportBody(), host: "news.example").status == 201)
        }
        #expect(endpoint.server.store.segments.count >= 20)
        let before = endpoint.server.store.segmentsRead
        #expect(try endpoint.get("/api/postbacks").bodyText.isEmpty)
        #expect(endpoint.server.store.segmentsRead == before)
        #expect(try endpoint.export().count == 20)
    }
}
