import Foundation
import Testing

/// The surfaces are folders of `Endpoint`, not targets of their own yet, so the compiler does not
/// keep them apart. This does: every type one surface names from another's folder is listed in
/// docs/ARCHITECTURE.md ("Where the surfaces still reach into each other"), and the list is
/// exactly what the sources do. A new reach fails here until it is written down (or, better,
/// removed); a reach removed fails until the list loses it too, so the list only shrinks honestly.
@Suite struct SurfaceDependencyTests {
    static let endpoint = ArchitectureDocumentTests.root.appendingPathComponent("Sources/Application/Endpoint")
    /// What every surface may use: the application's kit, and the wiring's clock and configuration.
    static let kit: Set<String> = ["Shared", "Access", "Server"]

    /// Each folder's files, without comments.
    static func sources() throws -> [String: [String]] {
        var folders: [String: [String]] = [:]
        for folder in try FileManager.default.contentsOfDirectory(atPath: endpoint.path) {
            let directory = endpoint.appendingPathComponent(folder)
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                folders[folder, default: []].append(text.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { line in line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line) }
                    .joined(separator: "\n"))
            }
        }
        return folders
    }

    /// (from, to, type) for every type declared in one folder and named in another.
    static func reaches() throws -> Set<String> {
        let folders = try sources()
        let declaration = try NSRegularExpression(pattern: #"^(?:(?:public|private|fileprivate|internal|final|indirect|@\w+)\s+)*(?:struct|class|enum|protocol|actor|typealias)\s+(\w+)"#,
                                                  options: [.anchorsMatchLines])
        var home: [String: String] = [:]
        for (folder, texts) in folders {
            for text in texts {
                for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let name = String(text[Range(match.range(at: 1), in: text)!])
                    home[name] = home[name] ?? folder
                }
            }
        }
        let word = try NSRegularExpression(pattern: #"\b[A-Z][A-Za-z0-9]+\b"#)
        var found: Set<String> = []
        for (folder, texts) in folders where folder != "Server" {
            for text in texts {
                for match in word.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let name = String(text[Range(match.range, in: text)!])
                    guard let other = home[name], other != folder, !kit.contains(other) else { continue }
                    found.insert("\(folder) → \(other): \(name)")
                }
            }
        }
        return found
    }

    /// The list in docs/ARCHITECTURE.md: "- `Apps/` → `Summary/`: `SummaryQuery`, `SummaryRoutes`".
    static func documented() throws -> Set<String> {
        var listed: Set<String> = []
        for line in ArchitectureDocumentTests.section("Where the surfaces still reach into each other", of: try ArchitectureDocumentTests.document())
        where line.hasPrefix("- `") {
            let parts = line.dropFirst(2).split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let folders = parts[0].replacingOccurrences(of: "`", with: "").replacingOccurrences(of: "/", with: "")
            for name in parts[1].split(separator: ",") {
                listed.insert("\(folders): \(name.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: ""))")
            }
        }
        return listed
    }

    @Test func everyReachBetweenSurfacesIsWrittenDownAndNoOther() throws {
        let found = try Self.reaches()
        let listed = try Self.documented()
        #expect(!found.isEmpty && !listed.isEmpty, "the scan or the list found nothing: one of them is broken")
        #expect(found.subtracting(listed).isEmpty, "not in docs/ARCHITECTURE.md: \(found.subtracting(listed).sorted())")
        #expect(listed.subtracting(found).isEmpty, "listed, no longer in the sources: \(listed.subtracting(found).sorted())")
    }

    @Test func theKitReachesIntoNoSurface() throws {
        let kitReaches = try Self.reaches().filter { reach in Self.kit.contains { reach.hasPrefix($0 + " → ") } }
        #expect(kitReaches.isEmpty, "\(kitReaches.sorted())")
    }
}
