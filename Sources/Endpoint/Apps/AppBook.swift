import DurableFiles
import AppDevelopers
import Locking
import Primitives

/// What the endpoint knows about its app developers: their apps and ad networks, saved in
/// `apps.json` in the data directory after every change.
final class AppBook: RegistryKeeper {
    let siteRules: SiteRules
    private let file: DurableJSONFile<AppRegistry>
    private let state: Locked<AppRegistry>

    init(dataDirectory: String, siteRules: SiteRules) throws {
        self.siteRules = siteRules
        file = DurableJSONFile(path: dataDirectory + "/apps.json", empty: AppRegistry())
        state = Locked(try file.load())
    }

    var registry: AppRegistry { state.withLock { $0 } }

    /// Applies `change` to a copy and saves it; the registry in memory changes only once the
    /// file is written.
    func update(_ change: (inout AppRegistry) throws(RequestProblem) -> Void) throws(RequestProblem) {
        try state.withLock { (registry) throws(RequestProblem) -> Void in
            var copy = registry
            try change(&copy)
            do {
                try file.save(copy)
            } catch {
                throw RequestProblem(.unavailable, rule: "registry_unavailable", field: nil,
                                     detail: "the app registry could not be saved: \(error)")
            }
            registry = copy
        }
    }
}
