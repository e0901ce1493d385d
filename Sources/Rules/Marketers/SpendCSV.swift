import Primitives

/// Reads a spend upload: RFC 4180 CSV with a header naming the columns `date`, `app_id`,
/// `ad_network`, `campaign`, `spend` and `currency` in any order, and one row per day, app, ad
/// network and campaign. Every refusal names the row and the column (`row 12: spend`), as
/// problem+json names a field.
public enum SpendCSV {
    public static let columns = ["date", "app_id", "ad_network", "campaign", "spend", "currency"]
    /// The largest amount one row may give: as a schema's revenue ranges, far above any day's
    /// spend and far below where adding them loses cents.
    public static let maxAmount = 1e12

    /// `site(appID)`: the registered app's site, or nil. `today`: days after tomorrow are refused.
    /// Rows are numbered from 1, after the header.
    public static func rows(from bytes: [UInt8], site: (Int) -> String?, today: Int32) throws(RequestProblem) -> [SpendRow] {
        let records = try records(bytes)
        guard let header = records.first else {
            throw .invalid("header", "no_rows", "the file is empty; its first line names the columns: \(columns.joined(separator: ","))")
        }
        var position: [String: Int] = [:]
        for (i, name) in header.enumerated() {
            guard columns.contains(name) else {
                throw .invalid("header", "unknown_column", "names \"\(name.prefix(40))\"; the columns are \(columns.joined(separator: ", "))")
            }
            guard position[name] == nil else { throw .invalid("header", "duplicate_column", "names \(name) twice") }
            position[name] = i
        }
        for name in columns where position[name] == nil {
            throw .invalid("header", "missing_column", "has no \(name) column; the columns are \(columns.joined(separator: ", "))")
        }
        guard records.count > 1 else { throw .invalid("header", "no_rows", "is followed by no row") }
        var out: [SpendRow] = []
        var seen: [SpendRow.Key: Int] = [:]
        for (n, record) in records.enumerated().dropFirst() {
            let row = "row \(n)"
            guard record.count == header.count else {
                throw .invalid(row, "wrong_field_count", "has \(record.count) fields; the header has \(header.count)")
            }
            func field(_ name: String) -> String { record[position[name]!] }
            let day = try day(field("date"), field: row + ": date", today: today)
            let appText = field("app_id")
            guard (1...20).contains(appText.utf8.count), appText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let appID = Int(appText), appID > 0 else {
                throw .invalid(row + ": app_id", "invalid_app_id", "must be the app's App Store id; got \"\(appText.prefix(30))\"")
            }
            guard let appSite = site(appID) else {
                throw .invalid(row + ": app_id", "unknown_app", "app \(appID) is not registered (POST /api/apps registers it)")
            }
            let network = field("ad_network")
            guard (1...200).contains(network.utf8.count), network.utf8.allSatisfy({ Self.isIDByte($0) }) else {
                throw .invalid(row + ": ad_network", "invalid_ad_network", "must be the ad network's id as its postbacks carry it (letters, digits, '.', '-', '_'), e.g. example123.skadnetwork; got \"\(network.prefix(40))\"")
            }
            let campaign = field("campaign")
            guard (1...4).contains(campaign.utf8.count), campaign.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                throw .invalid(row + ": campaign", "invalid_campaign", "must be the campaign as postbacks name it: a source identifier (2–4 digits) or a campaign id (1–100); got \"\(campaign.prefix(40))\"")
            }
            let amount = try amount(field("spend"), field: row + ": spend")
            let currency = field("currency")
            guard currency.utf8.count == 3, currency.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
                throw .invalid(row + ": currency", "invalid_currency", "must be an ISO 4217 code such as USD; got \"\(currency.prefix(10))\"")
            }
            let spend = SpendRow(day: day, appID: appID, site: appSite, adNetwork: network, campaign: campaign, amount: amount, currency: currency)
            if let first = seen[spend.key] {
                throw .invalid(row, "duplicate_row", "gives the same day, app, ad network and campaign as row \(first); one row each, so that which one counts is never a guess")
            }
            seen[spend.key] = n
            out.append(spend)
        }
        return out
    }

    static func isIDByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2E || b == 0x2D || b == 0x5F
    }

    /// `YYYY-MM-DD`, a real calendar day from 2000 to tomorrow.
    static func day(_ text: String, field: String, today: Int32) throws(RequestProblem) -> Int32 {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == 0x2D, bytes[7] == 0x2D,
              bytes.enumerated().allSatisfy({ $0.offset == 4 || $0.offset == 7 || (0x30...0x39).contains($0.element) }),
              let time = Timestamp(rfc3339: text + "T00:00:00Z"), time.rfc3339.hasPrefix(text) else {
            throw .invalid(field, "invalid_date", "must be a day as YYYY-MM-DD; got \"\(text.prefix(30))\"")
        }
        let day = time.day
        guard day >= 10_957, day <= today &+ 1 else {
            throw .invalid(field, "out_of_range", "must be from 2000-01-01 to tomorrow; got \(text)")
        }
        return day
    }

    /// Digits with at most four decimals, from 0 to `maxAmount`: no sign, no exponent, no
    /// thousands separator, so that no amount is read two ways.
    static func amount(_ text: String, field: String) throws(RequestProblem) -> Double {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digits = { (s: Substring) in s.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        guard let whole = parts.first, (1...13).contains(whole.utf8.count), digits(whole),
              parts.count == 1 || ((1...4).contains(parts[1].utf8.count) && digits(parts[1])),
              let value = Double(text), value.isFinite, value <= maxAmount else {
            throw .invalid(field, text.hasPrefix("-") ? "out_of_range" : "invalid_amount",
                           "must be an amount from 0 to 1e12 with at most four decimals, such as 125.50; got \"\(text.prefix(30))\"")
        }
        return value
    }

    /// The file's records: fields split at commas, quoted fields with `""` for a quote, lines
    /// ended by CRLF or LF, a byte-order mark and a last empty line ignored.
    static func records(_ bytes: [UInt8]) throws(RequestProblem) -> [[String]] {
        var at = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var records: [[String]] = []
        var record: [String] = []
        var field: [UInt8] = []
        var line = 1
        func text() throws(RequestProblem) -> String {
            guard let s = String(validating: field, as: UTF8.self) else {
                throw .invalid("row \(line - 1)", "invalid_utf8", "is not UTF-8")
            }
            return s
        }
        while at < bytes.count {
            let b = bytes[at]
            if b == 0x22 && field.isEmpty {
                // A quoted field: to the closing quote, `""` standing for one.
                let started = line
                at += 1
                var closed = false
                while at < bytes.count {
                    if bytes[at] == 0x22 {
                        if at + 1 < bytes.count && bytes[at + 1] == 0x22 {
                            field.append(0x22)
                            at += 2
                            continue
                        }
                        at += 1
                        closed = true
                        break
                    }
                    if bytes[at] == 0x0A { line += 1 }
                    field.append(bytes[at])
                    at += 1
                }
                guard closed else { throw .invalid("row \(started - 1)", "unclosed_quote", "has a quoted field that never ends") }
                guard at == bytes.count || [0x2C, 0x0D, 0x0A].contains(bytes[at]) else {
                    throw .invalid("row \(line - 1)", "malformed_csv", "has text after a quoted field's closing quote")
                }
                continue
            }
            switch b {
            case 0x2C:
                record.append(try text())
                field.removeAll(keepingCapacity: true)
                at += 1
            case 0x0D where at + 1 < bytes.count && bytes[at + 1] == 0x0A, 0x0A:
                record.append(try text())
                field.removeAll(keepingCapacity: true)
                records.append(record)
                record = []
                at += b == 0x0D ? 2 : 1
                line += 1
            default:
                field.append(b)
                at += 1
            }
        }
        if !field.isEmpty || !record.isEmpty {
            record.append(try text())
            records.append(record)
        }
        return records
    }
}
