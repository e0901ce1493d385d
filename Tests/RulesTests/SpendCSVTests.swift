import Marketers
import Primitives
import Testing

/// Spend uploads as a stranger could write them: every refusal names its row and column, no
/// input traps, and what is kept is bounded.
@Suite struct SpendCSVTests {
    static let today = Timestamp(rfc3339: "2026-11-29T12:00:00Z")!.day
    static let header = "date,app_id,ad_network,campaign,spend,currency\r\n"

    static func read(_ text: String) throws(RequestProblem) -> [SpendRow] {
        try SpendCSV.rows(from: Array(text.utf8), site: { $0 == 42 ? "app.example" : $0 == 43 ? "other.example" : nil }, today: today)
    }

    static func refusal(_ text: String) -> (field: String?, rule: String)? {
        do {
            _ = try read(text)
            return nil
        } catch {
            return (error.field, error.rule)
        }
    }

    @Test func aFileIsReadInAnyColumnOrderWithQuotesBOMAndEitherLineEnding() throws {
        let rows = try Self.read("\u{FEFF}currency,spend,campaign,ad_network,app_id,date\n" +
                                 "USD,125.50,4210,example123.skadnetwork,42,2026-11-20\n" +
                                 "\"EUR\",\"0\",\"12\",\"demo-ads.skadnetwork\",\"42\",\"2026-11-21\"\r\n")
        #expect(rows.count == 2)
        #expect(rows[0] == SpendRow(day: Timestamp(rfc3339: "2026-11-20T00:00:00Z")!.day, appID: 42, site: "app.example",
                                    adNetwork: "example123.skadnetwork", campaign: "4210", amount: 125.5, currency: "USD"))
        #expect(rows[1].amount == 0 && rows[1].currency == "EUR" && rows[1].campaign == "12")
        // Tomorrow is allowed (a marketer ahead of UTC), the day after is not.
        #expect(try Self.read(Self.header + "2026-11-30,42,n,1,1,USD").count == 1)
    }

    @Test func everyBadValueIsRefusedNamingItsRowAndColumn() {
        let good = ["2026-11-20", "42", "example123.skadnetwork", "4210", "125.50", "USD"]
        let columns = SpendCSV.columns
        let bad: [(column: Int, value: String, rule: String)] = [
            (0, "2026-02-30", "invalid_date"), (0, "2026-13-01", "invalid_date"), (0, "26-11-20", "invalid_date"),
            (0, "2026-11-20T00:00:00Z", "invalid_date"), (0, "2026/11/20", "invalid_date"), (0, "", "invalid_date"),
            (0, "1999-12-31", "out_of_range"), (0, "2026-12-01", "out_of_range"), (0, "9999-12-31", "out_of_range"),
            (1, "0", "invalid_app_id"), (1, "-42", "invalid_app_id"), (1, "4.2", "invalid_app_id"), (1, "99999999999999999999999", "invalid_app_id"),
            (1, "7", "unknown_app"),
            (2, "=HYPERLINK(\"http://evil\")", "invalid_ad_network"), (2, "@SUM(1)", "invalid_ad_network"), (2, "", "invalid_ad_network"),
            (2, "a b", "invalid_ad_network"), (2, String(repeating: "a", count: 201), "invalid_ad_network"),
            (3, "=1+1", "invalid_campaign"), (3, "+1", "invalid_campaign"), (3, "-1", "invalid_campaign"), (3, "12345", "invalid_campaign"),
            (3, "", "invalid_campaign"), (3, "Winter sale", "invalid_campaign"),
            (4, "-1", "out_of_range"), (4, "-0.01", "out_of_range"), (4, "1e5", "invalid_amount"), (4, "1,000", "invalid_amount"),
            (4, "12.34567", "invalid_amount"), (4, "", "invalid_amount"), (4, " 12", "invalid_amount"), (4, "NaN", "invalid_amount"),
            (4, "inf", "invalid_amount"), (4, "10000000000000", "invalid_amount"), (4, "1000000000000.01", "invalid_amount"), (4, ".5", "invalid_amount"),
            (4, "5.", "invalid_amount"), (4, "0x10", "invalid_amount"), (4, "=1+1", "invalid_amount"),
            (5, "usd", "invalid_currency"), (5, "US", "invalid_currency"), (5, "US$", "invalid_currency"), (5, "€", "invalid_currency"),
        ]
        for (column, value, rule) in bad {
            var cells = good
            cells[column] = value
            let line = cells.map { $0.contains(",") || $0.contains("\"") ? "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : $0 }.joined(separator: ",")
            let refused = Self.refusal(Self.header + "2026-11-19,42,n,1,1,USD\r\n" + line)
            #expect(refused?.rule == rule && refused?.field == "row 2: \(columns[column])", "\(columns[column]) \"\(value.prefix(30))\": \(String(describing: refused))")
        }
        // The largest amount is taken.
        #expect((try? Self.read(Self.header + "2026-11-20,42,n,1,1000000000000,USD"))?.first?.amount == 1e12)
    }

    @Test func theFileItselfIsCheckedBeforeItsRows() {
        let cases: [(String, String?, String)] = [
            ("", "header", "no_rows"),
            (Self.header, "header", "no_rows"),
            ("date,app_id,ad_network,campaign,spend\r\n2026-11-20,42,n,1,1\r\n", "header", "missing_column"),
            ("date,app_id,ad_network,campaign,spend,currency,note\r\n", "header", "unknown_column"),
            ("date,date,app_id,ad_network,campaign,spend,currency\r\n", "header", "duplicate_column"),
            (" date,app_id,ad_network,campaign,spend,currency\r\n", "header", "unknown_column"),
            (Self.header + "2026-11-20,42,n,1,1\r\n", "row 1", "wrong_field_count"),
            (Self.header + "2026-11-20,42,n,1,1,USD,x\r\n", "row 1", "wrong_field_count"),
            (Self.header + "2026-11-20,42,n,1,1,\"USD\r\n", "row 1", "unclosed_quote"),
            (Self.header + "2026-11-20,42,n,1,1,\"USD\"x\r\n", "row 1", "malformed_csv"),
            (Self.header + "2026-11-20,42,n,1,1,USD\r\n2026-11-20,42,n,1,2,USD\r\n", "row 2", "duplicate_row"),
        ]
        for (text, field, rule) in cases {
            let refused = Self.refusal(text)
            #expect(refused?.rule == rule && refused?.field == field, "\(text.debugDescription.prefix(60)): \(String(describing: refused))")
        }
        // Not UTF-8.
        var bytes = Array((Self.header + "2026-11-20,42,n,1,1,").utf8)
        bytes += [0xC3, 0x28, 0x0D, 0x0A]
        #expect(throws: RequestProblem.self) { try SpendCSV.rows(from: bytes, site: { _ in "app.example" }, today: Self.today) }
        // Random bytes never trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let noise = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in [UInt8]([0x2C, 0x22, 0x0A, 0x0D, 0x31, 0x2E, 0x41, 0xFF]).randomElement(using: &generator)! }
            _ = try? SpendCSV.rows(from: Array(Self.header.utf8) + noise, site: { _ in "app.example" }, today: Self.today)
        }
    }

    @Test func aLaterRowReplacesItsKeyAndTheSheetIsBounded() throws {
        var sheet = SpendSheet()
        let first = try Self.read(Self.header + "2026-11-20,42,n,1,1,USD\r\n2026-11-21,42,n,1,2,USD\r\n")
        #expect(try sheet.merge(first) == 0)
        let again = try Self.read(Self.header + "2026-11-20,42,n,1,5,USD\r\n")
        #expect(try sheet.merge(again) == 1)
        #expect(sheet.rows.count == 2 && sheet.rows[0].amount == 5)
        // Past a site's bound nothing changes; another site's spend is not held back by it.
        let many = (0..<SpendSheet.maxRowsPerSite).map { SpendRow(day: Int32($0), appID: 42, site: "app.example", adNetwork: "n", campaign: "2", amount: 1, currency: "USD") }
        #expect(throws: RequestProblem.self) { try sheet.merge(many) }
        #expect(sheet.rows.count == 2)
        var full = SpendSheet()
        try full.merge(many)
        #expect(throws: RequestProblem.self) { try full.merge([SpendRow(day: -1, appID: 42, site: "app.example", adNetwork: "n", campaign: "2", amount: 1, currency: "USD")]) }
        #expect(try full.merge([SpendRow(day: 1, appID: 43, site: "other.example", adNetwork: "n", campaign: "2", amount: 1, currency: "USD")]) == 0)
        do {
            try full.merge([SpendRow(day: -1, appID: 42, site: "app.example", adNetwork: "n", campaign: "2", amount: 1, currency: "USD")])
        } catch {
            #expect(error.rule == "spend_full" && !error.detail.contains("other.example") && !error.detail.contains("25001"))
        }
        #expect(sheet.remove(days: 0...Int32.max) { $0.site == "other.example" } == 0)
        #expect(sheet.remove(days: 0...Int32.max) { $0.site == "app.example" } == 2 && sheet.rows.isEmpty)
    }
}
