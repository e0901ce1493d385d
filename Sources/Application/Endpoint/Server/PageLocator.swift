import Foundation

/// Finds the summary page's folder wherever the binary runs: systemd, a container and an install
/// start it from `/` or from anywhere, so the page cannot be looked for in the working directory
/// alone. The folders, in order:
/// 1. the installed layout: the binary in `PREFIX/bin`, the page in `PREFIX/share/attribution-endpoint/Public`
///    (what `scripts/install.sh` lays out);
/// 2. a checkout's `Public/` above the binary, up to four folders up (`.build/release/attribution-endpoint`
///    is `.build/<triple>/release/` once its link is resolved);
/// 3. `./Public`, for `swift run` from the checkout.
public enum PageLocator {
    /// A folder holds the page when it has `index.html`.
    public static func holdsPage(_ directory: String) -> Bool {
        FileManager.default.fileExists(atPath: directory + "/index.html")
    }

    /// The folders searched, in order, for a binary at `executable` run from `workingDirectory`.
    public static func candidates(executable: String, workingDirectory: String) -> [String] {
        let binDirectory = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
        var folders = [binDirectory.deletingLastPathComponent().appendingPathComponent("share/attribution-endpoint/Public").path]
        var ancestor = binDirectory
        for _ in 0..<4 {
            ancestor = ancestor.deletingLastPathComponent()
            folders.append(ancestor.appendingPathComponent("Public").path)
        }
        folders.append(URL(fileURLWithPath: workingDirectory).appendingPathComponent("Public").path)
        var seen = Set<String>()
        return folders.map { ($0 as NSString).standardizingPath }.filter { seen.insert($0).inserted }
    }

    /// The first candidate that holds the page, or an error that names every folder looked at.
    public static func locate(executable: String = currentExecutable(),
                              workingDirectory: String = FileManager.default.currentDirectoryPath) throws -> String {
        let folders = candidates(executable: executable, workingDirectory: workingDirectory)
        if let found = folders.first(where: holdsPage) { return found }
        throw EndpointConfiguration.ParseError(description: """
            the summary page was not found; looked for index.html in:
            \(folders.map { "  " + $0 }.joined(separator: "\n"))
            Pass --public DIR with the page's folder (the repository's Public/, installed by scripts/install.sh \
            as PREFIX/share/attribution-endpoint/Public), or --no-page to run without it.
            """)
    }

    /// This process's executable, links resolved.
    public static func currentExecutable() -> String {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        return Bundle.main.executableURL?.resolvingSymlinksInPath().path ?? CommandLine.arguments[0]
    }
}
