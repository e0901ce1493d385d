@testable import ClickHouseExport
import DurableFiles
import Foundation
import LogConsumer
import Primitives
import Testing

/// The export's pure rules: values into columns, the retry schedule, the target and its
/// credentials, what ClickHouse's answers mean, the cursor.
@Suite struct ClickHouseTypeTests {
    @Test func numbersFitTheirColumnOrAreRefusedNeverTruncated() {
        #expect(ClickHouseType.uint8.literal(.number("255")) == "255")
        #expect(ClickHouseType.uint8.literal(.number("256")) == nil)
        #expect(ClickHouseType.uint8.literal(.number("-1")) == nil)
        #expect(ClickHouseType.uint8.literal(.number("1.5")) == nil)
        #expect(ClickHouseType.uint8.literal(.number("1e2")) == nil)
        #expect(ClickHouseType.uint16.literal(.number("65536")) == nil)
        #expect(ClickHouseType.uint32.literal(.number("4294967295")) == "4294967295")
        #expect(ClickHouseType.uint64.literal(.number("18446744073709551615")) == "18446744073709551615")
        #expect(ClickHouseType.uint64.literal(.number("18446744073709551616")) == nil)
        #expect(ClickHouseType.int64.literal(.number("-9223372036854775808")) == "-9223372036854775808")
        #expect(ClickHouseType.int64.literal(.number("9223372036854775808")) == nil)
        #expect(ClickHouseType.uint8.literal(.string("5")) == nil)
        #expect(ClickHouseType.uint8.literal(.bool(true)) == "1")
        #expect(ClickHouseType.uint8.literal(.bool(false)) == "0")
        // JSON's -0 is 0, written without the sign a ClickHouse would refuse in an unsigned column.
        var out: [UInt8] = []
        #expect(ClickHouseType.uint64.appendLiteral(.number("-0"), to: &out))
        #expect(String(decoding: out, as: UTF8.self) == "0")
        out = []
        #expect(ClickHouseType.nullable(.uint8).appendLiteral(.number("-0"), to: &out) && out == Array("0".utf8))
    }

    @Test func nullFitsOnlyANullableColumn() {
        #expect(ClickHouseType.nullable(.uint8).literal(.null) == "null")
        #expect(ClickHouseType.uint8.literal(.null) == nil)
        #expect(ClickHouseType.string.literal(.null) == nil)
        #expect(ClickHouseType.nullable(.uint8).literal(.number("300")) == nil)
    }

    @Test func stringsAreJSONEscapedAndOtherValuesWrittenAsText() {
        #expect(ClickHouseType.string.literal(.string("a\"b\\c\n")) == #""a\"b\\c\n""#)
        #expect(ClickHouseType.string.literal(.string("é€😀")) == "\"é€😀\"")
        #expect(ClickHouseType.string.literal(.number("42")) == "\"42\"")
        #expect(ClickHouseType.string.literal(.bool(true)) == "\"true\"")
        #expect(ClickHouseType.string.literal(.object([JSONMember(key: "k", value: .number("1"))])) == #""{\"k\":1}""#)
        #expect(ClickHouseType.arrayOfStrings.literal(.array([.string("a"), .number("2")])) == #"["a","2"]"#)
        #expect(ClickHouseType.arrayOfStrings.literal(.string("a")) == nil)
    }

    @Test func timesAreUTCSecondsWithinDateTimesRange() {
        #expect(ClickHouseType.dateTime.literal(.string("2026-11-20T10:00:00.123Z")) == "\"2026-11-20 10:00:00\"")
        #expect(ClickHouseType.dateTime(Timestamp(millisecondsSinceEpoch: -1)) == nil)
        // DateTime is 32 bits of seconds: 2106 is past it, and must not wrap to 1970.
        #expect(ClickHouseType.dateTime.literal(.string("2107-01-01T00:00:00Z")) == nil)
        #expect(ClickHouseType.dateTime.literal(.string("yesterday")) == nil)
        #expect(ClickHouseType.dateTime.sql == "DateTime('UTC')")
    }
}

@Suite struct ClickHouseTargetTests {
    @Test func theURLNamesServerAndDatabase() throws {
        let target = try ClickHouseTarget("http://10.0.0.5:8123/attribution", credentials: nil)
        #expect(target.server.absoluteString == "http://10.0.0.5:8123/")
        #expect(target.database == "attribution")
        #expect(target.description == "http://10.0.0.5:8123/attribution")
    }

    @Test func credentialsInTheURLAndOddURLsAreRefused() {
        for text in ["http://user:secret@127.0.0.1:8123/attribution", "http://user@127.0.0.1:8123/attribution",
                     "http://127.0.0.1:8123/", "http://127.0.0.1:8123", "http://127.0.0.1:8123/a;DROP", "http://127.0.0.1:8123/1db",
                     "http://127.0.0.1:8123/db?user=x", "ftp://127.0.0.1/db", "127.0.0.1:8123/db", "",
                     "http://127.0.0.1:8123/" + String(repeating: "a", count: 65), "http://127.0.0.1:8123/a/b"] {
            #expect(throws: ClickHouseTarget.TargetError.self, "\(text)") { try ClickHouseTarget(text, credentials: nil) }
        }
    }

    @Test func credentialsComeFromAFileOrTheEnvironment() throws {
        let file = NSTemporaryDirectory() + "clickhouse-credentials-" + UUID().uuidString
        try "writer:p:a:ss\nignored\n".write(toFile: file, atomically: true, encoding: .utf8)
        // Others can read it: refused, as ssh refuses such a key.
        chmod(file, 0o644)
        #expect(throws: ClickHouseTarget.TargetError.self) { try ClickHouseTarget.Credentials.resolve(file: file, environment: [:]) }
        chmod(file, 0o600)
        #expect(try ClickHouseTarget.Credentials.resolve(file: file, environment: ["CLICKHOUSE_USER": "other"])
                == ClickHouseTarget.Credentials(user: "writer", password: "p:a:ss"))
        #expect(try ClickHouseTarget.Credentials.resolve(file: nil, environment: ["CLICKHOUSE_USER": "u", "CLICKHOUSE_PASSWORD": "p"])
                == ClickHouseTarget.Credentials(user: "u", password: "p"))
        #expect(try ClickHouseTarget.Credentials.resolve(file: nil, environment: [:]) == nil)
        for bad in ["", "no-colon\n", ":password\n"] {
            try bad.write(toFile: file, atomically: true, encoding: .utf8)
            chmod(file, 0o600)
            #expect(throws: ClickHouseTarget.TargetError.self) { try ClickHouseTarget.Credentials.resolve(file: file, environment: [:]) }
        }
        #expect(throws: ClickHouseTarget.TargetError.self) { try ClickHouseTarget.Credentials.resolve(file: file + ".missing", environment: [:]) }
    }
}

@Suite struct ClickHouseAnswerTests {
    @Test func errorsThatADifferentAttemptCannotFixPauseAndTheRestAreRetried() {
        typealias C = ClickHouseClient
        #expect(C.outcome(status: 200, body: "") == .done(""))
        // 18.16 answers a bad row 500; the code says it is the data.
        guard case .refused = C.outcome(status: 500, body: "Code: 27, e.displayText() = DB::Exception: Cannot parse input") else { Issue.record("27"); return }
        guard case .refused = C.outcome(status: 400, body: "Code: 16. DB::Exception: No such column x") else { Issue.record("16"); return }
        guard case .missingTable = C.outcome(status: 404, body: "Code: 60. DB::Exception: Table attribution.x doesn't exist") else { Issue.record("60"); return }
        guard case .missingTable = C.outcome(status: 500, body: "Code: 81, e.displayText() = DB::Exception: Database attribution doesn't exist") else { Issue.record("81"); return }
        guard case .unavailable = C.outcome(status: 500, body: "Code: 241, e.displayText() = DB::Exception: Memory limit exceeded") else { Issue.record("241"); return }
        guard case .unavailable = C.outcome(status: 503, body: "") else { Issue.record("503"); return }
        // A wrong password is the operator's to fix: keep the records, keep trying.
        guard case .unavailable = C.outcome(status: 401, body: "Code: 516. Authentication failed") else { Issue.record("401"); return }
        guard case .unavailable = C.outcome(status: 500, body: "Code: 193, e.displayText() = DB::Exception: Wrong password") else { Issue.record("193"); return }
        #expect(C.errorCode("Code: 1234567890123456789012345") == nil)
        #expect(C.errorCode("no code") == nil)
    }
}

@Suite struct ExportCursorTests {
    @Test func aSavedCursorIsWhatTheNextStartReads() throws {
        let f = DurableJSONFile<LogCursor?>(path: NSTemporaryDirectory() + "cursor-" + UUID().uuidString + ".json", empty: nil)
        var cursor = try LogCursor.load(f, node: "a", target: "http://ch/db", logEnd: 100)
        #expect(cursor.streams.isEmpty)
        var batch = ExportBatch(table: "pcm_reports", end: 80)
        batch.rows = 7
        batch.unreadable = 1
        cursor.advance(past: batch)
        cursor.advance(past: batch)
        try f.save(cursor)
        let loaded = try LogCursor.load(f, node: "a", target: "http://ch/db", logEnd: 100)
        #expect(loaded.position(of: "pcm_reports") == LogPosition(offset: 80, records: 14, unreadable: 2))
        #expect(loaded.position(of: "postbacks") == LogPosition())
    }
}

@Suite struct TabSeparatedTests {
    @Test func fieldsAreUnescapedAsClickHouseEscapesThem() {
        func field(_ text: String) -> String { ClickHouseClient.unescaped(Substring(text).utf8[...]) }
        #expect(field("plain") == "plain")
        #expect(field(#"a\tb\nc\\d"#) == "a\tb\nc\\d")
        #expect(field(#"quote\'s"#) == "quote's")
        #expect(field("é✓") == "é✓")
        #expect(field(#"trailing\"#) == "trailing")
    }
}

/// A database made by an older schema version gets the columns added since, and only those.
@Suite struct SchemaUpgradeTests {
    @Test func onlyTheMissingColumnsOfExistingTablesAreAdded() {
        let schema = ExportTestLog.schema
        // apple_ads_calls as an older version made it: without `orgId`; postbacks complete; the
        // other tables not there at all (their CREATE makes them whole).
        var existing = "apple_ads_calls\tnode\napple_ads_calls\tid\napple_ads_calls\treceived_at\napple_ads_calls\treceived_at_ms\n"
        existing += "apple_ads_calls\ttoken_id\napple_ads_calls\tstatus\napple_ads_calls\textra\n"
        for column in schema.tables.first(where: { $0.name == "postbacks" })!.allColumns { existing += "postbacks\t\(column.name)\n" }
        existing += "unrelated\tx\nmalformed line\n\n"
        #expect(schema.missingColumns(database: "attribution", existing: existing)
                == ["ALTER TABLE attribution.apple_ads_calls ADD COLUMN `orgId` Nullable(Int64)"])
        #expect(schema.missingColumns(database: "attribution", existing: "").isEmpty)
        #expect(ClickHouseSchema.columnsQuery(database: "attribution").contains("system.columns WHERE database = 'attribution'"))
        #expect(ClickHouseSchema.columnsQuery(database: "a'b").contains(#"database = 'a\'b'"#))
    }
}
