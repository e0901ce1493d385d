import AppDevelopers
import Primitives
import Testing

func read(_ text: String) throws(RequestProblem) -> AppCounters {
    try AppCounters.read(try! JSONParser().parse(Array(text.utf8)))
}

@Suite struct AppCountersTests {
    @Test func theSeedsCountersAreRead() throws {
        let c = try read(#"{"app_id":6443210987,"first_launch":1762000000,"conversion_value":12,"coarse_conversion_value":"low","events":{"level_complete":3},"revenue":{"EUR":4.99},"framework":"adattributionkit"}"#)
        #expect(c.appID == 6443210987 && c.firstLaunch.millisecondsSinceEpoch == 1_762_000_000_000)
        #expect(c.conversionValue == 12 && c.coarseConversionValue == "low" && c.events == ["level_complete": 3] && c.revenue == ["EUR": 4.99])
        #expect(c.framework == .adattributionkit && c.skAdNetworkVersion == nil)
        let rfc = try read(#"{"app_id":1,"first_launch":"2026-11-20T09:00:00Z","events":["a","b","a"],"skadnetwork_version":"3.0"}"#)
        #expect(rfc.firstLaunch == Timestamp(rfc3339: "2026-11-20T09:00:00Z") && rfc.events == ["a": 2, "b": 1])
        #expect(rfc.skAdNetworkVersion == SKAdNetworkAPIVersion("3.0") && rfc.skAdNetworkVersion?.hasWindows == false)
    }

    /// An SDK may send identifiers; they are not part of the counters, so they cannot be kept.
    @Test func identifiersAreIgnored() throws {
        let c = try read(#"{"app_id":1,"first_launch":1762000000,"idfa":"AEBE52E7-03EE-455A-B3C4-E57283966239","idfv":"x","ip":"192.0.2.1"}"#)
        #expect(c == AppCounters(appID: 1, firstLaunch: Timestamp(millisecondsSinceEpoch: 1_762_000_000_000)))
        #expect(!String(describing: c).contains("AEBE52E7"))
    }

    @Test(arguments: [
        (#"[1]"#, nil, "not_an_object"),
        (#"{"first_launch":1762000000}"#, "app_id", "missing_field"),
        (#"{"app_id":"1","first_launch":1762000000}"#, "app_id", "wrong_type"),
        (#"{"app_id":-4,"first_launch":1762000000}"#, "app_id", "out_of_range"),
        (#"{"app_id":1}"#, "first_launch", "missing_field"),
        (#"{"app_id":1,"first_launch":"yesterday"}"#, "first_launch", "invalid_time"),
        (#"{"app_id":1,"first_launch":true}"#, "first_launch", "wrong_type"),
        (#"{"app_id":1,"first_launch":1e300}"#, "first_launch", "time_in_the_future"),
        (#"{"app_id":1,"first_launch":1762000000,"conversion_value":64}"#, "conversion_value", "out_of_range"),
        (#"{"app_id":1,"first_launch":1762000000,"conversion_value":1.5}"#, "conversion_value", "wrong_type"),
        (#"{"app_id":1,"first_launch":1762000000,"coarse_conversion_value":"mid"}"#, "coarse_conversion_value", "invalid_coarse_value"),
        (#"{"app_id":1,"first_launch":1762000000,"events":{"a":-1}}"#, "events.a", "out_of_range"),
        (#"{"app_id":1,"first_launch":1762000000,"events":"a"}"#, "events", "wrong_type"),
        (#"{"app_id":1,"first_launch":1762000000,"events":[3]}"#, "events[0]", "wrong_type"),
        (#"{"app_id":1,"first_launch":1762000000,"revenue":{"usd":1}}"#, "revenue.usd", "invalid_currency"),
        (#"{"app_id":1,"first_launch":1762000000,"revenue":{"USD":-1}}"#, "revenue.USD", "out_of_range"),
        (#"{"app_id":1,"first_launch":1762000000,"revenue":[1]}"#, "revenue", "wrong_type"),
        (#"{"app_id":1,"first_launch":1762000000,"framework":"adservices"}"#, "framework", "unknown_framework"),
        (#"{"app_id":1,"first_launch":1762000000,"skadnetwork_version":"four"}"#, "skadnetwork_version", "unknown_version"),
    ] as [(String, String?, String)])
    func aMalformedCounterIsRefusedNamingIt(body: String, field: String?, rule: String) {
        #expect { try read(body) } throws: { error in
            let problem = error as? RequestProblem
            return problem?.field == field && problem?.rule == rule
        }
    }
}
