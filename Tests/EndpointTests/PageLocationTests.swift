import Foundation
import Testing
import RawHTTPClient
@testable import Endpoint

/// The binary serves the summary page whatever folder it is started from, as systemd, a
/// container or an install start it.
@Suite(.serialized) struct PageLocationTests {
    @Test func theFoldersAreSearchedInstalledFirstThenTheCheckoutThenTheWorkingDirectory() {
        let folders = PageLocator.candidates(executable: "/opt/ae/bin/attribution-endpoint", workingDirectory: "/srv")
        #expect(folders == ["/opt/ae/share/attribution-endpoint/Public", "/opt/ae/Public", "/opt/Public", "/Public", "/srv/Public"])
        let build = PageLocator.candidates(executable: "/home/me/ae/.build/x86_64-unknown-linux-gnu/release/attribution-endpoint",
                                           workingDirectory: "/")
        #expect(build.contains("/home/me/ae/Public"), "a build folder finds its checkout's page")
    }

    @Test func theBuildFoldersBinaryServesThePageFromAnotherFolder() throws {
        let elsewhere = temporaryDirectory()
        let server = try EndpointProcess(arguments: ["--data", elsewhere + "/data", "--site", "news.example", "--token", "t"],
                                         workingDirectory: elsewhere)
        let page = try httpRequest(port: server.port, method: "GET", path: "/")
        server.signal(SIGTERM)
        let (status, stderr) = server.wait()
        #expect(page.status == 200 && page.bodyText.contains("<html"))
        #expect(stderr.contains("\"page\":\"\(repositoryRoot)/Public\""), "the listening line names the folder")
        #expect(status == 0)
    }

    @Test func anInstalledBinaryServesThePageFromShare() throws {
        let prefix = temporaryDirectory()
        let binary = try install(into: prefix, withPage: true)
        let server = try EndpointProcess(arguments: ["--data", prefix + "/data", "--site", "news.example", "--token", "t"],
                                         executable: binary, workingDirectory: "/")
        let page = try httpRequest(port: server.port, method: "GET", path: "/app.js")
        server.signal(SIGTERM)
        let (_, stderr) = server.wait()
        #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/javascript") == true)
        #expect(stderr.contains("\"page\":\"\(prefix)/share/attribution-endpoint/Public\""))
    }

    @Test func withoutAPageTheStartIsRefusedWithTheFoldersSearchedUnlessNoPage() throws {
        let prefix = temporaryDirectory()
        let binary = try install(into: prefix, withPage: false)
        let refused = try runEndpoint(["--port", "0", "--data", prefix + "/data", "--site", "news.example", "--token", "t"],
                                      executable: binary, workingDirectory: "/")
        #expect(refused.status == 1)
        #expect(refused.output.contains(prefix + "/share/attribution-endpoint/Public"), "\(refused.output)")
        #expect(refused.output.contains("--public") && refused.output.contains("--no-page"))

        let missing = try runEndpoint(["--port", "0", "--data", prefix + "/data", "--site", "news.example", "--public", prefix + "/nothing"],
                                      executable: binary, workingDirectory: "/")
        #expect(missing.status == 1 && missing.output.contains(prefix + "/nothing"))

        let server = try EndpointProcess(arguments: ["--data", prefix + "/data", "--site", "news.example", "--token", "t", "--no-page"],
                                         executable: binary, workingDirectory: "/")
        let page = try httpRequest(port: server.port, method: "GET", path: "/")
        let report = try httpRequest(port: server.port, method: "POST", path: "/.well-known/private-click-measurement/report-attribution/",
                                     host: "news.example", headers: [("Content-Type", "application/json")], body: Array(reportBody().utf8))
        server.signal(SIGTERM)
        let (status, stderr) = server.wait()
        #expect(page.status == 404 && report.status == 201)
        #expect(stderr.contains("\"page\":null") && status == 0)
    }

    /// The installed layout, as scripts/install.sh makes it: PREFIX/bin and PREFIX/share/attribution-endpoint/Public.
    private func install(into prefix: String, withPage: Bool) throws -> URL {
        let files = FileManager.default
        try files.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
        let binary = URL(fileURLWithPath: prefix + "/bin/attribution-endpoint")
        try files.copyItem(at: try endpointExecutable(), to: binary)
        if withPage {
            try files.createDirectory(atPath: prefix + "/share/attribution-endpoint", withIntermediateDirectories: true)
            try files.copyItem(atPath: repositoryRoot + "/Public", toPath: prefix + "/share/attribution-endpoint/Public")
        }
        return binary
    }
}
