import Testing
@testable import PCM
@testable import Primitives
@testable import SiteOwners

private let sample = PCMReport(sourceSite: "news.example", sourceID: 1, attributedOnSite: "shop.example", triggerData: 2)

@Suite struct RoleResolverTests {
    let served = RoleResolver(served: ServedSites(["news.example", "shop.example"], developmentMode: false))

    /// What the server reads from a Host header (`RequestedHost`), the one normalization.
    func host(_ header: String) -> String { HostSyntax.authority(of: header)!.name }

    @Test func roleComesFromTheSiteTheReportWasSentTo() throws {
        #expect(try served.resolve(sample, host: "news.example").get().role == .source)
        #expect(try served.resolve(sample, host: "news.example").get().site == "news.example")
        #expect(try served.resolve(sample, host: host("Shop.Example:443")).get().role == .destination)
        #expect(try served.resolve(sample, host: host("shop.example.")).get().site == "shop.example")
    }

    @Test func siteNotServedAndMismatchAreRefused() {
        guard case .failure(let notServed) = served.resolve(sample, host: "other.example") else { Issue.record(); return }
        #expect(notServed.rule == .siteNotServed)
        #expect(notServed.detail.contains("other.example"))
        guard case .failure(let none) = served.resolve(sample, host: nil) else { Issue.record(); return }
        #expect(none.rule == .siteNotServed)
        let third = PCMReport(sourceSite: "a.example", sourceID: 1, attributedOnSite: "b.example", triggerData: 2)
        guard case .failure(let mismatch) = served.resolve(third, host: "news.example") else { Issue.record(); return }
        #expect(mismatch.rule == .siteMismatch)
    }

    @Test func developmentModeWithoutSitesTakesTheRoleFromTheBody() throws {
        let dev = RoleResolver(served: ServedSites([], developmentMode: true))
        #expect(try dev.resolve(sample, host: "shop.example").get().role == .destination)
        let fallback = try dev.resolve(sample, host: host("127.0.0.1:8080")).get()
        #expect(fallback.role == .source)
        #expect(fallback.notes == ["role_from_body"])
        let local = PCMReport(sourceSite: "127.0.0.1", sourceID: 1, attributedOnSite: "localhost", triggerData: 2)
        #expect(try dev.resolve(local, host: host("localhost:8000")).get().role == .destination)
        #expect(try dev.resolve(local, host: host("127.0.0.1:8000")).get().role == .source)
    }

    @Test func hostNormalization() {
        #expect(host("[::1]:8080") == "::1")
        #expect(host("EXAMPLE.com") == "example.com")
        #expect(host("example.com:8443") == "example.com")
    }

    @Test func servedSitesOwnTheirSubdomainsRefusalsAndNothingElse() {
        let sites = ServedSites(["shop.example"], developmentMode: false)
        #expect(sites.contains("shop.example") && !sites.contains("www.shop.example") && !sites.contains("other.example"))
        #expect(sites.owner(ofHost: "www.shop.example") == "shop.example")
        #expect(sites.owner(ofHost: "shopshop.example") == nil && sites.owner(ofHost: nil) == nil)
        let anyHost = ServedSites([], developmentMode: true)
        #expect(anyHost.contains("localhost") && anyHost.owner(ofHost: "localhost") == "localhost")
        #expect(!ServedSites([], developmentMode: false).contains("localhost"))
        // One wording, which names what was sent where and never the sites served.
        #expect(ServedSites.notServedDetail(what: "the report", host: "other.example")
                == "the report was sent to \"other.example\", which this endpoint does not serve")
        #expect(ServedSites.notServedDetail(what: "the pixel", host: nil) == "the pixel came without a Host header, so it names no site this endpoint serves")
    }
}

@Suite struct TimestampTests {
    @Test func formatsAndParsesRFC3339() throws {
        let t = try #require(Timestamp(rfc3339: "2026-11-20T10:00:00Z"))
        #expect(t.millisecondsSinceEpoch == 1_795_168_800_000)
        #expect(t.rfc3339 == "2026-11-20T10:00:00.000Z")
        #expect(Timestamp(rfc3339: "2026-11-20T11:30:00.5+01:30")?.millisecondsSinceEpoch == 1_795_168_800_500)
        #expect(Timestamp(rfc3339: "2024-02-29T23:59:59.999999z")?.rfc3339 == "2024-02-29T23:59:59.999Z")
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.millisecondsSinceEpoch == 0)
        #expect(Timestamp(millisecondsSinceEpoch: -1).rfc3339 == "1969-12-31T23:59:59.999Z")
    }

    @Test func refusesWhatIsNotRFC3339() {
        for bad in ["", "2026-11-20", "2026-11-20T10:00:00", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
                    "2026-11-20T24:00:00Z", "2026-11-20T10:00:00.Z", "2026-11-20T10:00:00+0100", "yesterday",
                    "2026-11-20T10:00:00Zjunk"] {
            #expect(Timestamp(rfc3339: bad) == nil, "\(bad)")
        }
    }

    @Test func roundTripsAcrossYears() {
        for ms in stride(from: Int64(-100_000_000_000), to: 4_000_000_000_000, by: 86_399_937_113) {
            let t = Timestamp(millisecondsSinceEpoch: ms)
            #expect(Timestamp(rfc3339: t.rfc3339) == t)
        }
    }
}
