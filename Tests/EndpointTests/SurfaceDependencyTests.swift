import Foundation
import Testing

/// The surfaces are folders of `Endpoint`, so the compiler does not keep them apart. This does,
/// from the types each folder declares and the names each folder's code uses (comments left
/// out), against docs/ARCHITECTURE.md ("How the folders may depend on each other"):
/// - the kit names no surface and nothing of the application;
/// - a surface names the kit, and nothing of another surface;
/// - below the application, only the configuration and the admin token are named, by the
///   commands a surface offers;
/// - every folder is in exactly one of the three, as the document says.
@Suite struct SurfaceDependencyTests {
    static let endpoint = ArchitectureDocumentTests.root.appendingPathComponent("Sources/Application/Endpoint")
    static let title = "How the folders may depend on each other"
    /// What the commands a surface offers (`token-keys`, `viewer-token`, `rotate-token-key`) read of
    /// the application: the configuration file, and the admin token they call the server with.
    static let applicationNamedBelow: Set<String> = ["EndpointConfiguration", "AdminToken"]

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

    struct Reach: Hashable, CustomStringConvertible {
        let from: String, to: String, type: String
        var description: String { "\(from) → \(to): \(type)" }
    }

    /// Every type declared in one folder and named in another.
    static func reaches() throws -> Set<Reach> {
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
        var found: Set<Reach> = []
        for (folder, texts) in folders {
            for text in texts {
                for match in word.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let name = String(text[Range(match.range, in: text)!])
                    guard let other = home[name], other != folder else { continue }
                    found.insert(Reach(from: folder, to: other, type: name))
                }
            }
        }
        return found
    }

    /// The document's three lines: "- kit: `Shared/`, `Stores/`, `Access/` …".
    static func documented() throws -> (kit: Set<String>, application: Set<String>, surfaces: Set<String>) {
        var named: [String: Set<String>] = [:]
        for line in ArchitectureDocumentTests.section(title, of: try ArchitectureDocumentTests.document()) where line.hasPrefix("- **") {
            let parts = line.dropFirst(4).split(separator: "**", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let folders = try NSRegularExpression(pattern: #"`(\w+)/`"#)
            let rest = String(parts[1].prefix { $0 != "." })
            named[String(parts[0]).lowercased()] = Set(folders.matches(in: rest, range: NSRange(rest.startIndex..., in: rest)).map {
                String(rest[Range($0.range(at: 1), in: rest)!])
            })
        }
        return (named["the kit"] ?? [], named["the application"] ?? [], named["the surfaces"] ?? [])
    }

    @Test func everyFolderIsInOneGroupAsTheDocumentSays() throws {
        let (kit, application, surfaces) = try Self.documented()
        #expect(!kit.isEmpty && !application.isEmpty && !surfaces.isEmpty, "the section's three lines were not found")
        #expect(kit.isDisjoint(with: application) && kit.isDisjoint(with: surfaces) && application.isDisjoint(with: surfaces))
        let onDisk = Set(try Self.sources().keys)
        #expect(kit.union(application).union(surfaces) == onDisk)
    }

    @Test func noSurfaceNamesAnother() throws {
        let (kit, application, surfaces) = try Self.documented()
        let wrong = try Self.reaches().filter { reach in
            surfaces.contains(reach.from) && !kit.contains(reach.to)
                && !(application.contains(reach.to) && Self.applicationNamedBelow.contains(reach.type))
        }
        #expect(wrong.isEmpty, "\(wrong.map(\.description).sorted())")
    }

    @Test func theKitNamesNoSurfaceAndNothingOfTheApplication() throws {
        let (kit, application, _) = try Self.documented()
        let wrong = try Self.reaches().filter { reach in
            kit.contains(reach.from) && !kit.contains(reach.to)
                && !(application.contains(reach.to) && Self.applicationNamedBelow.contains(reach.type))
        }
        #expect(wrong.isEmpty, "\(wrong.map(\.description).sorted())")
    }

    /// Were the scan blind, the tests above could not fail: it must see the wiring name the surfaces.
    @Test func theScanSeesTheApplicationWireTheSurfaces() throws {
        let reaches = try Self.reaches()
        #expect(reaches.contains(Reach(from: "Server", to: "PCM", type: "ReportHandler")))
        #expect(reaches.contains(Reach(from: "Server", to: "Apps", type: "PostbackHandler")))
        #expect(reaches.contains(Reach(from: "Restart", to: "PCM", type: "TokenChecks")))
    }
}
