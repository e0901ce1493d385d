import DurableFiles
import Foundation

/// The ClickHouse the export writes to: `--clickhouse http://HOST:PORT/DATABASE`, and the user and
/// password, which come from a file or the environment, never from the command line (where `ps`
/// and shell histories show them) and never from the URL.
public struct ClickHouseTarget: Sendable, CustomStringConvertible {
    /// The server's HTTP interface, without the database.
    public let server: URL
    public let database: String
    public let credentials: Credentials?

    public struct Credentials: Sendable, Equatable {
        public var user: String
        public var password: String

        public init(user: String, password: String) {
            self.user = user
            self.password = password
        }

        /// `user:password` on the file's first line; else `CLICKHOUSE_USER` and
        /// `CLICKHOUSE_PASSWORD` from the environment; else none (ClickHouse's `default` user).
        public static func resolve(file: String?, environment: [String: String]) throws(TargetError) -> Credentials? {
            if let file {
                let line: String
                do throws(PrivateFileError) {
                    line = try PrivateFiles.readSecret(file, what: "the ClickHouse credentials file")
                } catch {
                    throw TargetError(error.description)
                }
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                    throw TargetError("\(file) must hold user:password on its first line")
                }
                return Credentials(user: String(line[..<colon]),
                                   password: String(line[line.index(after: colon)...]).trimmingCharacters(in: CharacterSet(charactersIn: "\r")))
            }
            guard let user = environment["CLICKHOUSE_USER"], !user.isEmpty else { return nil }
            return Credentials(user: user, password: environment["CLICKHOUSE_PASSWORD"] ?? "")
        }
    }

    public struct TargetError: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// `text` is `http://HOST[:PORT]/DATABASE` (or https). The database is a plain identifier,
    /// since it is written into every statement.
    public init(_ text: String, credentials: Credentials?) throws(TargetError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty else {
            throw TargetError("--clickhouse must be http://HOST:PORT/DATABASE, not '\(text)'")
        }
        guard components.user == nil && components.password == nil else {
            throw TargetError("--clickhouse must not carry a user or password: use --clickhouse-credentials FILE or CLICKHOUSE_USER and CLICKHOUSE_PASSWORD")
        }
        guard components.query == nil && components.fragment == nil else {
            throw TargetError("--clickhouse takes no query or fragment: http://HOST:PORT/DATABASE")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard Self.isIdentifier(database) else {
            throw TargetError("--clickhouse must end with the database's name (letters, digits, _; at most 64), as in http://127.0.0.1:8123/attribution")
        }
        var base = URLComponents()
        base.scheme = scheme
        base.host = host
        base.port = components.port
        base.path = "/"
        guard let server = base.url else { throw TargetError("--clickhouse: '\(text)' is not a URL") }
        self.server = server
        self.database = database
        self.credentials = credentials
    }

    public static func isIdentifier(_ text: String) -> Bool {
        guard let first = text.utf8.first, text.utf8.count <= 64, !(48...57).contains(first) else { return false }
        return text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 }
    }

    /// As the cursor, `/healthz` and the log name it: no credentials.
    public var description: String { server.absoluteString + database }
}
