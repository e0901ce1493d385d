import DurableFiles
import Locking
import Marketers
import Primitives

/// The advertisers, saved in `advertisers.json` in the data directory after every change.
final class AdvertiserBook: RegistryKeeper {
    let siteRules: SiteRules
    private let file: DurableJSONFile<AdvertiserRegistry>
    private let state: Locked<AdvertiserRegistry>

    init(dataDirectory: String, siteRules: SiteRules) throws {
        self.siteRules = siteRules
        file = DurableJSONFile(path: dataDirectory + "/advertisers.json", empty: AdvertiserRegistry())
        state = Locked(try file.load())
    }

    var registry: AdvertiserRegistry { state.withLock { $0 } }

    /// Applies `change` to a copy and saves it; the registry in memory changes only once the
    /// file is written.
    func update(_ change: (inout AdvertiserRegistry) throws(RequestProblem) -> Void) throws(RequestProblem) {
        try state.withLock { (registry) throws(RequestProblem) -> Void in
            var copy = registry
            try change(&copy)
            do {
                try file.save(copy)
            } catch {
                throw RequestProblem(.unavailable, rule: "registry_unavailable", field: nil,
                                     detail: "the advertisers could not be saved: \(error)")
            }
            registry = copy
        }
    }
}
