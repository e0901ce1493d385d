import Foundation

/// Whether this data directory's node has started with `--cluster` before: `DATA/cluster-member`.
/// A member's start takes the shared config file as a reload does, removing what the file no
/// longer holds; a first start in a cluster refuses registrations the file lacks
/// (`ConfiguredRegistrations.requireOnlyConfigured`), since they were made through this node's
/// own admin API and would otherwise be lost without a word.
struct ClusterMembership {
    static let fileName = "cluster-member"
    let path: String

    init(dataDirectory: String) {
        path = dataDirectory + "/" + Self.fileName
    }

    var isMember: Bool { FileManager.default.fileExists(atPath: path) }

    /// Marks the node a member after a cluster start; a start without `--cluster` forgets it, so
    /// that joining again is checked again.
    func record(_ cluster: Bool) throws {
        if cluster {
            guard isMember || FileManager.default.createFile(atPath: path, contents: Data("--cluster\n".utf8),
                                                             attributes: [.posixPermissions: 0o600]) else {
                throw EndpointConfiguration.ParseError(description: "cannot write \(path)")
            }
        } else if isMember {
            try FileManager.default.removeItem(atPath: path)
        }
    }
}
