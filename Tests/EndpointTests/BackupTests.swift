import Foundation
import Primitives
import RecordLog
import Testing
@testable import Endpoint

/// `attribution-endpoint backup` and `restore`: what a backup holds and leaves out, its manifest,
/// and every way a restore or a start refuses a backup that is not what it says.
@Suite struct BackupTests {
    static let now = Timestamp(rfc3339: "2026-11-29T12:00:00Z")!

    /// The fixture log of every kind as a node's data directory, with the files a node keeps
    /// beside it, derived and transient ones too.
    func dataDirectory() throws -> String {
        let fixture = try #require(Bundle.module.url(forResource: "log-2026-11-25", withExtension: nil))
        let directory = temporaryDirectory()
        for file in ["reports.log", "registry.json", "apps.json"] {
            try FileManager.default.copyItem(at: fixture.appendingPathComponent(file), to: URL(fileURLWithPath: directory + "/" + file))
        }
        let fm = FileManager.default
        try fm.createDirectory(atPath: directory + "/development", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: directory + "/segment-sites", withIntermediateDirectories: true)
        for (name, text) in [("admin-token", "secret\n"), ("development/123.json", "[]"), ("viewer-tokens.json.lock", ""),
                             ("registry.json.tmp", "half"), ("segment-sites/0.json", "{}"), ("clickhouse-export.json", "{}")] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        return directory
    }

    @Test func aBackupHoldsTheStateAndTheLogAndLeavesOutWhatIsDerivedOrTransient() throws {
        let data = try dataDirectory()
        let backup = temporaryDirectory() + "/backup"
        let manifest = try BackupCommand.backUp(data, to: backup, at: Self.now)
        #expect(Set(manifest.files.map(\.path)) == ["reports.log", "registry.json", "apps.json", "admin-token", "development/123.json",
                                                     "clickhouse-export.json"])
        #expect(manifest.log.start == 0 && manifest.log.end > 0)
        #expect(manifest.problems(in: backup).isEmpty)
        let saved = try BackupManifest.load(from: backup)
        #expect(saved == manifest)
        // Each checksum is the file's SHA-256, as any tool computes it.
        let registry = try #require(manifest.files.first { $0.path == "registry.json" })
        #expect(registry.sha256 == sha256sum(backup + "/registry.json"))
    }

    @Test func aRestoredNodeServesTheSameRecordsAndGivesNewOnesIdsAboveTheFloor() throws {
        let fixture = try #require(Bundle.module.url(forResource: "log-2026-11-25", withExtension: nil))
        let backup = temporaryDirectory() + "/backup"
        try BackupCommand.backUp(try dataDirectory(), to: backup, at: Self.now)
        let restored = temporaryDirectory() + "/restored"
        let manifest = try RestoreCommand.restore(backup, into: restored, at: Self.now)
        #expect(!FileManager.default.fileExists(atPath: restored + "/" + BackupManifest.fileName))
        let kept = try JSONDecoder().decode(BackupManifest.self, from: Data(contentsOf: URL(fileURLWithPath: restored + "/" + BackupManifest.restoredName)))
        #expect(kept.restoredAt == Self.now && kept.idFloor == manifest.idFloor)
        // The backup is left as it was: a second restore from it works.
        #expect(try BackupManifest.load(from: backup).problems(in: backup).isEmpty)

        let endpoint = try LiveEndpoint(sites: ["news.example", "app.example", "shop.example"], directory: restored) { configuration in
            configuration.logPreallocationMB = 0
            configuration.manualClock = true
            configuration.appleAdsAPI = "http://127.0.0.1:9/"
        }
        endpoint.clock.set("2026-11-01T00:00:00Z")
        defer { endpoint.stop() }
        #expect(endpoint.server.store.restores.count == 1)
        let export = try endpoint.get("/api/reports")
        #expect(Data(export.body) == (try Data(contentsOf: fixture.appendingPathComponent("reports.ndjson"))))
        // A report taken now gets an id above the floor.
        let report = try endpoint.post(#"{"source_engagement_type":"click","source_site":"news.example","source_id":3,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#, host: "shop.example")
        #expect(report.status == 201)
        let last = try #require(try endpoint.get("/api/reports").bodyText.split(separator: "\n").last)
        let id = try #require((try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])?["id"] as? NSNumber)
        #expect(id.uint64Value >= (manifest.idFloor ?? .max))
    }

    @Test func aRestoreRefusesAChangedOrMissingFileAndNamesIt() throws {
        let backup = temporaryDirectory() + "/backup"
        try BackupCommand.backUp(try dataDirectory(), to: backup, at: Self.now)
        let log = backup + "/reports.log"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: log)))
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: log))
        try FileManager.default.removeItem(atPath: backup + "/admin-token")
        let target = temporaryDirectory() + "/restored"
        let error = try #require(throws: BackupError.self) { try RestoreCommand.restore(backup, into: target, at: Self.now) }
        #expect(error.description.contains("reports.log: its SHA-256 is not the manifest's"))
        #expect(error.description.contains("admin-token: missing"))

        // A start on the backup's folder itself refuses it the same way, and changes nothing.
        #expect(throws: BackupError.self) {
            _ = try LiveEndpoint(sites: ["news.example"], directory: backup)
        }
        #expect(FileManager.default.fileExists(atPath: backup + "/" + BackupManifest.fileName))
    }

    @Test func whatIsNotABackupOrNotEmptyIsRefused() throws {
        let data = try dataDirectory()
        // A backup into a folder that holds something, or of a folder without a log.
        let busy = temporaryDirectory()
        try Data("x".utf8).write(to: URL(fileURLWithPath: busy + "/file"))
        #expect(throws: BackupError.self) { try BackupCommand.backUp(data, to: busy, at: Self.now) }
        #expect(throws: BackupError.self) { try BackupCommand.backUp(temporaryDirectory(), to: temporaryDirectory() + "/b", at: Self.now) }
        // A restore from a folder without a manifest, or into a folder that holds something.
        #expect(throws: BackupError.self) { try RestoreCommand.restore(data, into: temporaryDirectory() + "/r", at: Self.now) }
        let backup = temporaryDirectory() + "/backup"
        try BackupCommand.backUp(data, to: backup, at: Self.now)
        #expect(throws: BackupError.self) { try RestoreCommand.restore(backup, into: busy, at: Self.now) }
        // A manifest that names a path outside the backup.
        var manifest = try BackupManifest.load(from: backup)
        for path in ["../escape", "/etc/passwd", "a/../../b", "", "a//b"] {
            #expect(!BackupManifest.isSafe(path), "\(path)")
            manifest.files[0].path = path
            try manifest.save(in: backup)
            #expect(throws: BackupError.self) { try RestoreCommand.restore(backup, into: temporaryDirectory() + "/r", at: Self.now) }
        }
        // A manifest of another format, or not JSON.
        try Data(#"{"format":2}"#.utf8).write(to: URL(fileURLWithPath: backup + "/" + BackupManifest.fileName))
        #expect(throws: BackupError.self) { try BackupManifest.load(from: backup) }
        try Data("not json".utf8).write(to: URL(fileURLWithPath: backup + "/" + BackupManifest.fileName))
        #expect(throws: BackupError.self) { try BackupManifest.load(from: backup) }
    }

    @Test func aLinkAPipeOrTheBackupItselfInsideTheDataDirectoryIsNeverFollowedOrCopied() throws {
        let data = try dataDirectory()
        try FileManager.default.createSymbolicLink(atPath: data + "/advertisers.json", withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: data + "/development/elsewhere", withDestinationPath: "/etc")
        #expect(mkfifo(data + "/pipe", 0o600) == 0)
        let backup = temporaryDirectory() + "/backup"
        var skipped: [String] = []
        let manifest = try BackupCommand.backUp(data, to: backup, at: Self.now, skipped: &skipped)
        #expect(Set(skipped) == ["advertisers.json", "development/elsewhere", "pipe"])
        #expect(!manifest.files.contains { $0.path.hasPrefix("advertisers") || $0.path.contains("elsewhere") || $0.path == "pipe" })
        #expect(!FileManager.default.fileExists(atPath: backup + "/advertisers.json"))
        // A destination inside the data directory, however it is spelled: through a link to it,
        // or a link to a folder in it followed by "..".
        let links = temporaryDirectory()
        try FileManager.default.createSymbolicLink(atPath: links + "/data", withDestinationPath: data)
        try FileManager.default.createSymbolicLink(atPath: links + "/development", withDestinationPath: data + "/development")
        for inside in [data + "/backups", data + "/./x", data, links + "/data/y", links + "/development/../z"] {
            #expect(throws: BackupError.self, "\(inside)") { try BackupCommand.backUp(data, to: inside, at: Self.now) }
        }
        for name in ["backups", "x", "y", "z"] { #expect(!FileManager.default.fileExists(atPath: data + "/" + name), "\(name)") }
        // A link among the derived files is left out too, not taken as a link.
        try FileManager.default.createDirectory(atPath: data + "/digests", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: data + "/digests/0.digest", withDestinationPath: "/etc/passwd")
        var again: [String] = []
        let second = try BackupCommand.backUp(data, to: temporaryDirectory() + "/second", at: Self.now, skipped: &again)
        #expect(again.contains("digests/0.digest"))
        #expect(!second.files.contains { $0.path.hasPrefix("digests/") })
    }

    @Test func theManifestNamesTheCursorsNodeAndKeepsTheDigestsOfRemovedSegments() throws {
        let data = try dataDirectory()
        try Data(#"{"node":"node-7","target":"http://ch/db","tables":{}}"#.utf8).write(to: URL(fileURLWithPath: data + "/clickhouse-export.json"))
        try FileManager.default.createDirectory(atPath: data + "/digests", withIntermediateDirectories: true)
        // The digest of a segment retention removed (its base before every segment kept).
        try Data("digest".utf8).write(to: URL(fileURLWithPath: data + "/digests/0.digest"))
        let backup = temporaryDirectory() + "/backup"
        let manifest = try BackupCommand.backUp(data, to: backup, at: Self.now)
        #expect(manifest.node == "node-7")
        #expect(manifest.files.contains { $0.path == "digests/0.digest" })
        #expect(!FileManager.default.fileExists(atPath: backup + "/" + BackupCommand.incompleteName))
    }

    @Test func aBackupCutShortAClockBehindItOrARestoreCutShortAreHandled() throws {
        let backup = temporaryDirectory() + "/backup"
        try BackupCommand.backUp(try dataDirectory(), to: backup, at: Self.now)
        // A clock behind the backup's time would give a floor below the lost node's ids.
        let behind = Timestamp(rfc3339: "2026-11-28T12:00:00Z")!
        let error = try #require(throws: BackupError.self) { try RestoreCommand.restore(backup, into: temporaryDirectory() + "/r", at: behind) }
        #expect(error.description.contains("clock"))

        // Cut short before its manifest: refused by a start, whatever else is there.
        let cut = temporaryDirectory() + "/cut"
        try FileManager.default.copyItem(atPath: backup, toPath: cut)
        try FileManager.default.removeItem(atPath: cut + "/" + BackupManifest.fileName)
        try Data("x".utf8).write(to: URL(fileURLWithPath: cut + "/" + BackupCommand.incompleteName))
        #expect(RestoredData.isPending(cut))
        let refused = try #require(throws: BackupError.self) { try RestoredData.take(cut, at: Self.now) }
        #expect(refused.description.contains("did not finish"))

        // A restore cut short while copying: the manifest went first, so a start checks the
        // folder against it and refuses, rather than starting without an id floor.
        let partial = temporaryDirectory() + "/partial"
        try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: backup + "/" + BackupManifest.fileName, toPath: partial + "/" + BackupManifest.fileName)
        try FileManager.default.copyItem(atPath: backup + "/registry.json", toPath: partial + "/registry.json")
        #expect(RestoredData.isPending(partial))
        let half = try #require(throws: BackupError.self) { try RestoredData.take(partial, at: Self.now) }
        #expect(half.description.contains("restore again"))

        // A restore cut short after the manifest became restored-from.json: the next start
        // finishes it, floor and all.
        let restored = temporaryDirectory() + "/restored"
        try RestoreCommand.restore(backup, into: restored, at: Self.now)
        var kept = try JSONDecoder().decode(BackupManifest.self, from: Data(contentsOf: URL(fileURLWithPath: restored + "/" + BackupManifest.restoredName)))
        let floor = try #require(kept.idFloor)
        kept.idFloor = nil
        try JSONEncoder().encode(kept).write(to: URL(fileURLWithPath: restored + "/" + BackupManifest.restoredName))
        #expect(RestoredData.isPending(restored))
        let later = Timestamp(rfc3339: "2026-11-29T13:00:00Z")!
        let finished = try RestoredData.take(restored, at: later)
        #expect((finished.idFloor ?? 0) > floor)
        #expect(!RestoredData.isPending(restored))
        // A backup of the restored node leaves out what it was restored from: its history, which
        // a restore of that backup writes anew (its restores travel in log/RESTORES).
        let next = try BackupCommand.backUp(restored, to: temporaryDirectory() + "/next", at: later)
        #expect(!next.files.contains { $0.path == BackupManifest.restoredName })
        #expect(next.files.contains { $0.path == "log/RESTORES" })
        // A kept manifest that cannot be read is not a restore to finish: the node starts.
        try Data("garbled".utf8).write(to: URL(fileURLWithPath: restored + "/" + BackupManifest.restoredName))
        #expect(!RestoredData.isPending(restored))
    }

    @Test func theCommandsRefuseEveryMalformedCommandLineWithoutTouchingAnything() throws {
        let config = temporaryDirectory() + "/config.json"
        try Data(#"{"sites":["news.example"],"data":"/var/lib/from-config"}"#.utf8).write(to: URL(fileURLWithPath: config))
        #expect(BackupArguments.parse(["dest"], command: "backup", folderRole: "x") == .run(.init(folder: "dest", dataDirectory: "./data")))
        #expect(BackupArguments.parse(["dest", "--config", config], command: "backup", folderRole: "x")
                == .run(.init(folder: "dest", dataDirectory: "/var/lib/from-config")))
        #expect(BackupArguments.parse(["--config", config, "--data", "d", "dest"], command: "backup", folderRole: "x")
                == .run(.init(folder: "dest", dataDirectory: "d")))
        #expect(BackupArguments.parse(["-h"], command: "backup", folderRole: "x") == .help)
        for hostile in [[], ["--data"], ["dest", "--config"], ["dest", "--bogus"], ["a", "b"], [""], ["dest", "--config", "/nonexistent"],
                        ["dest", "--data", "d", "--config"], [String(repeating: "-", count: 10_000)]] {
            guard case .refused(let reason) = BackupArguments.parse(hostile, command: "backup", folderRole: "the folder") else {
                Issue.record("\(hostile.map { $0.prefix(20) }) was taken")
                continue
            }
            #expect(!reason.isEmpty)
        }
        // Through the commands themselves: a refusal is exit 1, nothing written.
        let data = try dataDirectory()
        let before = try FileManager.default.contentsOfDirectory(atPath: data).sorted()
        #expect(BackupCommand.main(arguments: ["--data", data], environment: [:]) == 1)
        #expect(RestoreCommand.main(arguments: [temporaryDirectory(), "--data", data], environment: [:]) == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: data).sorted() == before)
    }

    private func sha256sum(_ path: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        process.waitUntilExit()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
    }
}
