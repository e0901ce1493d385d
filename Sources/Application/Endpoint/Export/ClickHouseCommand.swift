import ClickHouseExport
import Foundation
import RecordLog

/// `attribution-endpoint clickhouse schema|queries|rows`: what the export writes and reads,
/// for a DBA who creates the tables ahead of the nodes, for checking the queries on another
/// ClickHouse, and for loading a stopped node's log by hand.
public enum ClickHouseCommand {
    static let usage = """
        usage: attribution-endpoint clickhouse schema [DATABASE]
               attribution-endpoint clickhouse queries [DATABASE] [--from YYYY-MM-DD --to YYYY-MM-DD] [--site SITE]
               attribution-endpoint clickhouse rows TABLE --data DIR --node NAME

        schema   the tables, as deploy/clickhouse/schema.sql holds them (DATABASE: attribution)
        queries  every query the cluster's summaries run, for that period and site, one per
                 statement ending ';'
        rows     TABLE's rows from the log in DIR (a stopped node's, or a copy), as the export
                 sends them: INSERT INTO DATABASE.TABLE FORMAT JSONEachRow (a table of counts,
                 pcm_report_counts, from the batches the export would send: load it only where
                 the node has no counts yet, since other batches would count its records twice)
        """ + EndpointConfiguration.sharedOptionsHelp(["--data", "--node"])

    public static func main(arguments: [String]) -> Int32 {
        guard let verb = arguments.first else { return fail("") }
        var positional: [String] = [], options: [String: String] = [:]
        var i = 1
        while i < arguments.count {
            let word = arguments[i]
            if word == "--help" || word == "-h" { print(usage); return 0 }
            if word.hasPrefix("--") {
                let known: Set<String> = verb == "queries" ? ["--from", "--to", "--site"] : verb == "rows" ? ["--data", "--node"] : []
                guard known.contains(word) else { return fail("unknown option '\(word)' for \(verb)") }
                guard i + 1 < arguments.count else { return fail("\(word) needs a value") }
                options[word] = arguments[i + 1]
                i += 2
            } else {
                positional.append(word)
                i += 1
            }
        }
        guard positional.count <= 1 else { return fail("one \(verb == "rows" ? "table" : "database") at most, not \(positional.joined(separator: " "))") }
        let database = verb == "rows" ? "attribution" : positional.first ?? "attribution"
        guard ClickHouseTarget.isIdentifier(database) else { return fail("a database is named with letters, digits and _") }
        let schema = ClickHouseTables.schema
        switch verb {
        case "schema":
            print(schema.file(database: database), terminator: "")
        case "queries":
            let today = SummaryAggregates.day(of: EndpointClock.systemNow())
            guard let from = options["--from"].map(SummaryQuery.day) ?? today - 29, let to = options["--to"].map(SummaryQuery.day) ?? today else {
                return fail("--from and --to are dates such as 2026-11-20")
            }
            let query = AppsSummary.Query(site: options["--site"], from: from, to: to)
            let statements = [ClusterSummary.sql(database: database, from: from, to: to)]
                + ClusterAppsSummary.sql(database: database, query: query) + [ClusterAppleAdsSummary.sql(database: database, query: query)]
                + [ClusterNodes.sql(database: database)]
            for statement in statements { print(statement + ";\n") }
        case "rows":
            // A rollup's rows come from its table's batches.
            guard let name = positional.first,
                  let table = schema.tables.first(where: { $0.name == name || $0.rollup?.name == name }) else {
                return fail("name one of the tables: " + schema.tables.flatMap { [$0.name] + ($0.rollup.map { [$0.name] } ?? []) }.joined(separator: ", "))
            }
            let counts = table.name != name
            guard let data = options["--data"], let node = options["--node"] else { return fail("rows needs --data DIR and --node NAME") }
            guard EndpointConfiguration.isNodeName(node) else { return fail("--node: 1 to 64 letters, digits, '.', '_' or '-'") }
            do {
                let store = try RecordLog(directory: data)
                defer { store.close() }
                let end = store.durablePrefix.end
                var offset = 0
                var buffer: [UInt8] = []
                while offset < end {
                    let batch = ExportBatch.read(table, node: node, from: offset, through: end, in: store, reusing: &buffer)
                    defer { buffer = batch.body }
                    FileHandle.standardOutput.write(Data(counts ? batch.rollupBody : batch.body))
                    offset = batch.end
                }
            } catch {
                return fail("cannot read the log in \(data): \(error)")
            }
        default:
            return fail("unknown command '\(verb)'")
        }
        return 0
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data(((message.isEmpty ? "" : "attribution-endpoint clickhouse: \(message)\n\n") + usage + "\n").utf8))
        return 2
    }
}
