import AppDevelopers
import DurableFiles
import Locking
import Marketers
import Primitives

/// A registry kept in memory behind a lock and saved whole to its JSON file in the data directory
/// after every change: the app developers' (`AppRegistryStore`, `apps.json`) and the advertisers'
/// (`AdvertiserRegistryStore`, `advertisers.json`). The site owners' registry shares its lock with the
/// trigger ledger, so it has a book of its own (`SiteOwnerStore`).
final class RegistryStore<Contents: Codable & Sendable & Equatable>: RegistryKeeper {
    let siteRules: SiteRules
    /// What the registry holds, for the refusal when it cannot be saved: "the app registry".
    private let what: String
    private let file: DurableJSONFile<Contents>
    private let state: Locked<Contents>

    init(path: String, empty: Contents, what: String, siteRules: SiteRules) throws {
        self.siteRules = siteRules
        self.what = what
        file = DurableJSONFile(path: path, empty: empty)
        state = Locked(try file.load())
    }

    var registry: Contents { state.withLock { $0 } }

    /// Applies `change` to a copy and saves it; the registry in memory changes only once the
    /// file is written.
    func update(_ change: (inout Contents) throws(RequestProblem) -> Void) throws(RequestProblem) {
        try state.withLock { (registry) throws(RequestProblem) -> Void in
            var copy = registry
            try change(&copy)
            do {
                try file.save(copy)
            } catch {
                throw RequestProblem(.unavailable, rule: "registry_unavailable", field: nil, detail: "\(what) could not be saved: \(error)")
            }
            registry = copy
        }
    }
}

/// The app developers' apps and ad networks, in `apps.json`.
typealias AppRegistryStore = RegistryStore<AppRegistry>
/// The advertisers and their sites, in `advertisers.json`.
typealias AdvertiserRegistryStore = RegistryStore<AdvertiserRegistry>
/// The spend marketers gave, in `spend.json`.
typealias SpendStore = RegistryStore<SpendSheet>

extension RegistryStore where Contents == AppRegistry {
    convenience init(dataDirectory: String, siteRules: SiteRules) throws {
        try self.init(path: dataDirectory + "/apps.json", empty: AppRegistry(), what: "the app registry", siteRules: siteRules)
    }
}

extension RegistryStore where Contents == AdvertiserRegistry {
    convenience init(dataDirectory: String, siteRules: SiteRules) throws {
        try self.init(path: dataDirectory + "/advertisers.json", empty: AdvertiserRegistry(), what: "the advertisers", siteRules: siteRules)
    }
}

extension RegistryStore where Contents == SpendSheet {
    convenience init(dataDirectory: String, siteRules: SiteRules) throws {
        try self.init(path: dataDirectory + "/spend.json", empty: SpendSheet(), what: "the spend", siteRules: siteRules)
    }

    /// The rows of `from...to` whose site `reads` says the reader may read.
    func rows(from: Int32, to: Int32, reads: (String) -> Bool) -> [SpendRow] {
        registry.rows.filter { $0.day >= from && $0.day <= to && reads($0.site) }
    }
}
