import Foundation
import HTTPServer
import Testing
@testable import Endpoint

/// docs/ARCHITECTURE.md stays true: its route table is the router's, and its thread list names
/// every thread the sources start, and no other.
@Suite struct ArchitectureDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func document() throws -> String {
        try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
    }

    /// The lines of the section under `## title`, up to the next one.
    static func section(_ title: String, of text: String) -> [Substring] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0 == "## " + title }) else { return [] }
        let rest = lines[(start + 1)...]
        return Array(rest.prefix { !$0.hasPrefix("## ") })
    }

    @Test func theRouteTableIsTheRoutersOwn() throws {
        var documented: [String: (methods: String, token: Bool)] = [:]
        for line in Self.section("Surfaces and the route table", of: try Self.document()) where line.hasPrefix("| `/") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let path = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            #expect(documented[path] == nil, "\(path) is in the table twice")
            documented[path] = (cells[1], cells[2] == "yes")
        }
        #expect(documented.count > 30)
        let endpoint = try LiveEndpoint { $0.manualClock = true }
        defer { endpoint.stop() }
        var routed: Set<String> = []
        for entry in endpoint.server.routes.router.table {
            let path = switch entry.path {
            case .exact(let path): path
            case .prefix(let prefix): prefix + "…"
            }
            routed.insert(path)
            let row = documented[path]
            #expect(row != nil, "\(path) is routed but not in docs/ARCHITECTURE.md's table")
            #expect(row?.methods == entry.methods.joined(separator: ", "), "\(path): the methods")
            #expect(row?.token == entry.gated, "\(path): whether it needs a token")
        }
        #expect(Set(documented.keys).subtracting(routed).isEmpty, "in the table, not routed: \(Set(documented.keys).subtracting(routed))")
    }

    /// Every name given to a thread in Sources/ (`startThread(named:)`, `PeriodicSweep`, a log
    /// consumer's `LogFollower`, a relay destination's, which is `relay-NAME`, and the pools,
    /// whose threads are `name-N`).
    static func threadNamesInSources() throws -> Set<String> {
        let patterns = [#"startThread\(named: "([a-z0-9-]+)""#: "", #"PeriodicSweep\(named: "([a-z0-9-]+)""#: "",
                        #"LogFollower\(thread: "([a-z0-9-]+)","#: "",
                        // One per relay destination, named after it.
                        #"LogFollower\(thread: "([a-z0-9-]+)" \+ name"#: "NAME",
                        #"WorkerPool\(named: "([a-z0-9-]+)""#: "-N", #"BodyProducers\(named: "([a-z0-9-]+)""#: "-N"]
        var names: Set<String> = []
        let sources = root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
        for case let file as URL in files where file.pathExtension == "swift" {
            // The stand-in for Apple's API is the demo's and the tests', never the endpoint's.
            guard !file.path.contains("/AppleAdsStandIn/") else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for (pattern, suffix) in patterns {
                let regex = try NSRegularExpression(pattern: pattern)
                for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    names.insert(String(text[Range(match.range(at: 1), in: text)!]) + suffix)
                }
            }
        }
        return names
    }

    @Test func theThreadListNamesEveryThreadAndNoOther() throws {
        var documented: Set<String> = []
        // Each bullet names its thread first in backquotes: "- `log-writer`: …", "- the event loop (`http-event-loop`): …".
        for line in Self.section("Threads", of: try Self.document()) where line.hasPrefix("- ") {
            guard let open = line.firstIndex(of: "`") else { continue }
            let name = line[line.index(after: open)...].prefix { $0 != "`" }
            documented.insert(String(name))
        }
        let started = try Self.threadNamesInSources()
        #expect(started.count > 20)
        #expect(started.subtracting(documented).isEmpty, "started but not in docs/ARCHITECTURE.md: \(started.subtracting(documented).sorted())")
        #expect(documented.subtracting(started).isEmpty, "documented but started nowhere: \(documented.subtracting(started).sorted())")
    }

    /// A running endpoint's threads carry those names, as the kernel keeps them (15 bytes at most).
    @Test func aRunningEndpointsThreadsCarryTheDocumentedNames() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let started = try Self.threadNamesInSources()
        var running: Set<String> = []
        for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8) else { continue }
            running.insert(comm.trimmingCharacters(in: .newlines))
        }
        // Always there, whatever the options: the loop, the log's threads, the pools.
        for name in ["http-event-loop", "log-writer", "log-preallocator", "record-log-flush", "reads-N", "export-N", "segment-sites", "heap-trim"] {
            #expect(started.contains(name), "\(name) is started nowhere")
            let kernelName = String(name.replacingOccurrences(of: "-N", with: "-0").prefix(15))
            #expect(running.contains(kernelName), "no thread named \(kernelName) among \(running.sorted())")
        }
    }
}

extension ArchitectureDocumentTests {
    /// Every type the document names in backquotes (`RecordLog`, `SiteOwnerStore.judge`) is a
    /// word of the sources: a type renamed or removed fails here until the document follows.
    @Test func everyTypeItNamesExists() throws {
        let document = try Self.document()
        // The words of the sources and the tests (`LiveEndpoint`), and their files' names: a file
        // named for its concept (`RegistriesWithin`) counts as that concept.
        var sources = ""
        for folder in ["Sources", "Tests"] {
            let files = FileManager.default.enumerator(at: Self.root.appendingPathComponent(folder), includingPropertiesForKeys: nil)!
            for case let file as URL in files where file.pathExtension == "swift" {
                sources += file.deletingPathExtension().lastPathComponent + "\n" + (try String(contentsOf: file, encoding: .utf8))
            }
        }
        let words = Set(sources.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
        // A name, then a member or not; not a folder (`Shared/`) or a file (`Package.swift`).
        let named = try NSRegularExpression(pattern: #"`([A-Z][A-Za-z0-9]+)((?:\.[a-z][A-Za-z0-9]*)?)(?![A-Za-z0-9/])"#)
        var missing: Set<String> = []
        for match in named.matches(in: document, range: NSRange(document.startIndex..., in: document)) {
            let type = String(document[Range(match.range(at: 1), in: document)!])
            let member = String(document[Range(match.range(at: 2), in: document)!].dropFirst())
            if ["swift", "md", "json", "yml", "yaml", "sql", "py", "sh", "csv", "txt", "dat", "plist", "log"].contains(member) { continue }
            // Capitalised words in backquotes that are no Swift names: headers, files, flags.
            if ["GET", "HEAD", "POST", "DELETE", "PUT", "Allow", "Host", "Retry", "Authorization", "Content", "Connection", "Transfer",
                "SCHED", "RSA", "SHA", "ECDSA", "JWS", "CSV", "JSON", "NDJSON", "PCM", "TLS", "HTTP", "SIGINT", "SIGTERM", "EIO",
                "WWW", "X", "Set", "Cookie", "Location", "If", "ETag", "Cache", "Info", "README", "ARCHITECTURE", "UTC"].contains(type) { continue }
            if !words.contains(type) || (!member.isEmpty && !words.contains(member)) {
                missing.insert(member.isEmpty ? type : type + "." + member)
            }
        }
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md names what the sources do not have: \(missing.sorted())")
    }
}
