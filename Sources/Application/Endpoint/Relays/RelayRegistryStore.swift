import Primitives
import Relays

/// The relay destinations, in `relays.json` (0600: it holds their secrets).
typealias RelayRegistryStore = RegistryStore<RelayRegistry>

extension RegistryStore where Contents == RelayRegistry {
    convenience init(dataDirectory: String, siteRules: SiteRules) throws {
        try self.init(path: dataDirectory + "/relays.json", empty: RelayRegistry(), what: "the relay destinations", siteRules: siteRules)
    }
}
