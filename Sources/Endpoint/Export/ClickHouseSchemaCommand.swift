/// `attribution-endpoint clickhouse-schema [DATABASE]`: prints the export's schema, as
/// `deploy/clickhouse/schema.sql` holds it, for a DBA who creates the tables ahead of the nodes.
public enum ClickHouseSchemaCommand {
    public static func main(arguments: [String]) -> Int32 {
        let database = arguments.first ?? "attribution"
        guard arguments.count <= 1, !database.hasPrefix("-"), database.utf8.allSatisfy({ $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }),
              let first = database.utf8.first, !(48...57).contains(first) else {
            print("usage: attribution-endpoint clickhouse-schema [DATABASE]   (a name of letters, digits and _)")
            return 2
        }
        print(ClickHouseTables.schema.file(database: database), terminator: "")
        return 0
    }
}
