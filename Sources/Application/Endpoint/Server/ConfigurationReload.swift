import Foundation
import Locking
import Primitives

/// A reload (`SIGHUP`, `systemctl reload`): the config file, the token file and, in a cluster,
/// the shared token keys read again, and every change that can be applied live applied, without
/// dropping a request in flight. One `reload` event says what changed, and what needs a restart
/// and why (`EndpointOption.reload` declares which is which). A file that does not parse or does
/// not pass the checks changes nothing: the running configuration stays, and one `reload_refused`
/// event says where the file is wrong.
final class ConfigurationReload: Sendable {
    struct Outcome: Sendable, Equatable {
        /// What changed: "site registrations", "app registrations", "advertisers", "relays",
        /// "admin token", "token keys".
        var applied: [String] = []
        /// Options whose new value waits for a restart, with why.
        var needsRestart: [Deferred] = []
        /// Why nothing changed, when the files were refused.
        var refused: String?

        struct Deferred: Sendable, Equatable {
            var option: String
            var reason: String
        }
    }

    /// What is in effect: the start's configuration with the live changes since.
    private let running: Locked<EndpointConfiguration>
    private let books: ConfiguredRegistrations.Books
    private let tokenKeys: TokenKeyStore
    private let access: AccessControl
    private let now: @Sendable () -> Timestamp
    /// Told when the relay destinations changed, so that their deliveries follow.
    private let relaysChanged: @Sendable () -> Void
    /// One reload at a time: signals sent faster than a reload takes wait for the one before.
    private let serial = Locked(())

    init(running: EndpointConfiguration, books: ConfiguredRegistrations.Books, tokenKeys: TokenKeyStore, access: AccessControl,
         now: @escaping @Sendable () -> Timestamp, relaysChanged: @escaping @Sendable () -> Void) {
        self.running = Locked(running)
        self.books = books
        self.tokenKeys = tokenKeys
        self.access = access
        self.now = now
        self.relaysChanged = relaysChanged
    }

    /// Reads the configuration with `parse` (the command line and the environment the process
    /// started with, over the config file as it is now) and applies it; logs and returns the outcome.
    @discardableResult
    func reload(_ parse: () throws -> EndpointConfiguration) -> Outcome {
        serial.withLock { _ in
            let outcome = apply(parse)
            if let refused = outcome.refused {
                // `applied` is empty unless the admin API changed a registry between the check and
                // the save: what was saved before the refusal is named, not hidden.
                EventLog.write("reload_refused", ["error": .string(refused), "applied": .array(outcome.applied.map { .string($0) })])
            } else {
                EventLog.write("reload", [
                    "applied": .array(outcome.applied.map { .string($0) }),
                    "needs_restart": .array(outcome.needsRestart.map { .object([JSONMember(key: "option", value: .string($0.option)),
                                                                               JSONMember(key: "reason", value: .string($0.reason))]) }),
                ])
            }
            return outcome
        }
    }

    private func apply(_ parse: () throws -> EndpointConfiguration) -> Outcome {
        let old = running.withLock { $0 }
        let new: EndpointConfiguration
        do { new = try parse() } catch { return Outcome(refused: "\(error)") }
        var outcome = Outcome()
        for option in EndpointConfiguration.options where option.value(old) != option.value(new) {
            // `--token` is live with no key of its own: the admin token is the step below.
            if case .restart(let reason) = option.reload {
                outcome.needsRestart.append(.init(option: option.name, reason: reason))
            }
        }
        // Everything is read and checked before anything changes. Registrations are checked against
        // what runs: the served sites and `--relay-allow-http` change only with a restart.
        var registered = new
        registered.relayAllowHTTP = old.relayAllowHTTP
        let registrations = ConfiguredRegistrations(configuration: registered, servedSites: Set(old.sites), exact: old.cluster, now: now())
        let keyChange: TokenKeyStore.FileChange
        do {
            try registrations.check(against: books)
            keyChange = try tokenKeys.changeFromFile(at: now())
        } catch let problem as RequestProblem {
            // A site added to "sites" with its registrations: the site waits for a restart, and so
            // must they.
            let restart = problem.rule == "site_not_served" && Set(new.sites) != Set(old.sites)
                ? " (\"sites\" changed: a new site is served only after a restart; restart, or reload without its registrations first)" : ""
            return Outcome(refused: "config file \(new.configFile ?? ""): \(ConfiguredRegistrations.refusal(problem))" + restart)
        } catch {
            return Outcome(refused: "\(old.tokenKeysPath): \(error)")
        }
        var changes = ConfiguredRegistrations.Changes()
        do {
            try registrations.apply(to: books, recording: &changes)
            outcome.applied += changes.keys
            if changes.keys.contains("relays") { relaysChanged() }
        } catch {
            // Checked a moment ago: only a registration through the admin API in between, or a
            // registry that cannot be saved, gets here. What was saved before it stays, and is named.
            if changes.keys.contains("relays") { relaysChanged() }
            return Outcome(applied: changes.keys, refused: "config file \(new.configFile ?? ""): \(ConfiguredRegistrations.refusal(error))")
        }
        if !keyChange.isEmpty {
            tokenKeys.take(keyChange)
            outcome.applied.append("token keys")
            for key in keyChange.added {
                EventLog.write("token_key_loaded", ["site": .string(key.site), "key_id": .string(key.keyID),
                                                    "serves_from": .string(key.servesFrom.rfc3339)])
            }
            for key in keyChange.withdrawn {
                EventLog.write("token_key_withdrawn", ["site": .string(key.site), "key_id": .string(key.keyID),
                                                       "serves_from": .string(key.servesFrom.rfc3339)])
            }
        }
        // A token from the command line, the token file or the environment; a token the node made
        // itself (DATA/admin-token) stays unless one of them now gives another, and then goes.
        if let token = new.adminToken, token != access.adminToken {
            access.adminToken = token
            AdminToken.retireMadeToken(dataDirectory: new.dataDirectory)
            outcome.applied.append("admin token")
        }
        running.withLock { configuration in
            for option in EndpointConfiguration.options where option.value(old) != option.value(new) {
                if case .live = option.reload, let key = option.key { configuration.takeLive(key, from: new) }
            }
            configuration.adminToken = new.adminToken ?? configuration.adminToken
        }
        return outcome
    }
}

extension EndpointConfiguration {
    /// The option `key`'s value from `other`: what a reload applied, now in effect. False for an
    /// option a reload does not apply.
    @discardableResult
    mutating func takeLive(_ key: String, from other: EndpointConfiguration) -> Bool {
        switch key {
        case "conversions": conversions = other.conversions
        case "campaigns": campaigns = other.campaigns
        case "apps": apps = other.apps
        case "ad_networks": adNetworks = other.adNetworks
        case "apple_ads_campaigns": appleAdsCampaigns = other.appleAdsCampaigns
        case "advertisers": advertisers = other.advertisers
        case "relays": relays = other.relays
        case "token_file": adminTokenFile = other.adminTokenFile
        default: return false
        }
        return true
    }
}
