import AppDevelopers
import Foundation
import Primitives
import Signatures
import Testing
@testable import Endpoint

/// The Apple Ads Platform API's names, without the network: which name wins, when a refresh is
/// due, what an answer's item yields, and the credentials file refused for each mistake. The
/// exchange itself, against a stand-in that checks the client secret with Python's
/// `cryptography`, is scripts/apple_ads_platform_test.py.
@Suite struct AppleAdsNamesTests {
    @Test func aTypedNameWinsOverALookedUpOne() throws {
        let directory = temporaryDirectory()
        let names = AppleAdsNames(dataDirectory: directory)
        names.update { book in
            book.campaigns = ["7": "Looked-up campaign", "8": "Other looked-up"]
            book.adGroups = ["70": "Looked-up group"]
            book.keywords = ["700": "looked-up keyword"]
        }
        var registry = AppRegistry()
        try registry.add(AppleAdsCampaign(campaignID: 7, name: "Typed campaign", adGroups: [.init(id: 70, name: "Typed group")]))
        let naming = AppleAdsNaming(registry: registry, lookedUp: names)
        #expect(naming.campaign(7) == "Typed campaign" && naming.campaign(8) == "Other looked-up" && naming.campaign(9) == nil)
        #expect(naming.adGroup(70, campaign: 7) == "Typed group" && naming.keyword(700, campaign: 7) == "looked-up keyword")
        #expect(naming.campaign(nil) == nil)
        // Without the option, nothing changes: typed names only.
        #expect(AppleAdsNaming(registry: registry).campaign(8) == nil)
        // Kept across a restart; a damaged file is only a cache.
        #expect(AppleAdsNames(dataDirectory: directory).campaign(8) == "Other looked-up")
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: directory + "/apple-ads-names.json"))
        #expect(AppleAdsNames(dataDirectory: directory).book.count == 0)
    }

    @Test func aRefreshIsDueDailyAndHourlyForAnUnnamedID() {
        let hour: Int64 = 3_600_000, now: Int64 = 1_800_000_000_000
        var seen = AppleAdsNameLookup.Seen()
        var book = AppleAdsNames.Book()
        #expect(!AppleAdsNameLookup.isDue(book, seen: seen, now: now, retryAt: nil), "nothing seen, nothing asked")
        seen.campaigns = [7]
        #expect(AppleAdsNameLookup.isDue(book, seen: seen, now: now, retryAt: nil))
        #expect(!AppleAdsNameLookup.isDue(book, seen: seen, now: now, retryAt: now + 1), "the API asked to wait")
        book.campaigns = ["7": "A"]
        book.refreshedAt = now - hour
        book.attemptedAt = now - hour
        #expect(!AppleAdsNameLookup.isDue(book, seen: seen, now: now, retryAt: nil), "named, refreshed an hour ago")
        #expect(AppleAdsNameLookup.isDue(book, seen: seen, now: now + 23 * hour + 1, retryAt: nil), "a day after")
        seen.adGroups = [7: [70]]
        #expect(AppleAdsNameLookup.isDue(book, seen: seen, now: now, retryAt: nil), "an ad group without a name, an hour after the last try")
        book.attemptedAt = now - hour / 2
        #expect(!AppleAdsNameLookup.isDue(book, seen: seen, now: now, retryAt: nil), "but not twice in an hour")
        // Failing for a day: tried again each hour, never more often.
        book.refreshedAt = now - 30 * hour
        #expect(!AppleAdsNameLookup.isDue(book, seen: seen, now: now, retryAt: nil))
        #expect(AppleAdsNameLookup.isDue(book, seen: seen, now: now + hour, retryAt: nil))
    }

    @Test func anItemYieldsItsIdAndNameOrNothing() {
        func item(_ json: String) -> [JSONMember] {
            guard case .object(let members)? = try? JSONParser().parse(Array(json.utf8)) else { return [] }
            return members
        }
        #expect(AppleAdsNames.named(item(#"{"id":542370539,"name":"Puzzles"}"#), nameKey: "name")! == ("542370539", "Puzzles"))
        #expect(AppleAdsNames.named(item(#"{"id":"9151314442816847872","name":"Brand"}"#), nameKey: "name")! == ("9151314442816847872", "Brand"))
        #expect(AppleAdsNames.named(item(#"{"id":87675432,"text":"puzzle game"}"#), nameKey: "text")! == ("87675432", "puzzle game"))
        for bad in [#"{"id":1}"#, #"{"name":"x"}"#, #"{"id":"x","name":"y"}"#, #"{"id":1.5,"name":"y"}"#, #"{"id":1,"name":""}"#,
                    #"{"id":1,"name":5}"#, #"{"id":99999999999999999999,"name":"y"}"#] {
            #expect(AppleAdsNames.named(item(bad), nameKey: "name") == nil, "\(bad)")
        }
        let long = AppleAdsNames.named(item(#"{"id":1,"name":""# + String(repeating: "é", count: 5000) + #""}"#), nameKey: "name")
        #expect(long?.1.count == AppleAdsNames.maxNameLength)
    }

    @Test func theCredentialsFileIsRefusedForEachMistake() throws {
        let directory = temporaryDirectory()
        let pem = P256PrivateKey().pemRepresentation
        try pem.write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        try "junk".write(toFile: directory + "/junk.pem", atomically: true, encoding: .utf8)
        func load(_ json: String) -> String? {
            let path = directory + "/platform.json"
            try? json.write(toFile: path, atomically: true, encoding: .utf8)
            do { _ = try AppleAdsPlatformCredentials.load(file: path); return nil } catch { return error.description }
        }
        let good = #"{"client_id":"SEARCHADS.c","team_id":"SEARCHADS.t","key_id":"k","ad_account_id":"123","private_key_file":"\#(directory)/key.pem"}"#
        #expect(load(good) == nil)
        let cases: [(String, String)] = [
            (good.replacingOccurrences(of: #""client_id":"SEARCHADS.c","#, with: ""), "client_id is missing"),
            (good.replacingOccurrences(of: "\"123\"", with: "\"12a\""), "ad_account_id must be digits"),
            (good.replacingOccurrences(of: "key.pem", with: "junk.pem"), "not a P-256 private key"),
            (good.replacingOccurrences(of: "key.pem", with: "absent.pem"), "cannot read the private key"),
            (good.replacingOccurrences(of: "}", with: #","secret":"x"}"#), "unknown key secret"),
            (good.replacingOccurrences(of: "\"k\"", with: "\"a\\nb\""), "key_id is missing or not a one-line string"),
            ("[]", "is not a JSON object"),
        ]
        for (json, said) in cases {
            let refusal = load(json)
            #expect(refusal?.contains(said) == true, "\(said): \(refusal ?? "accepted")")
        }
    }
}
