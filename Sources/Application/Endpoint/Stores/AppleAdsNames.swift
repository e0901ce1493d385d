import DurableFiles
import Foundation
import Locking
import Primitives

/// The names of Apple Ads campaigns, ad groups and keywords as the Apple Ads Platform API gave
/// them, by id: what the views show where no name was typed in (a registered name always wins).
/// Kept in `DATA/apple-ads-names.json`, written after each refresh, read at start, so that a
/// restart asks Apple nothing it already knows.
final class AppleAdsNames: Sendable {
    struct Book: Codable, Sendable, Equatable {
        /// By id, written in digits (as the file keeps them; short strings are stored inline).
        var campaigns: [String: String] = [:]
        var adGroups: [String: String] = [:]
        var keywords: [String: String] = [:]
        /// Milliseconds since 1970: the last refresh that ended well, and the last tried.
        var refreshedAt: Int64?
        var attemptedAt: Int64?
        var lastError: String?
        var requests = 0

        enum CodingKeys: String, CodingKey {
            case campaigns, adGroups = "ad_groups", keywords, refreshedAt = "refreshed_at", attemptedAt = "attempted_at",
                 lastError = "last_error", requests
        }

        var count: Int { campaigns.count + adGroups.count + keywords.count }
    }

    /// Names kept of each kind at most: an account's, with room; a longer answer is cut here.
    static let maxPerKind = 1_000_000
    /// A name longer than this is cut: it is shown, not trusted.
    static let maxNameLength = 200

    private let file: DurableJSONFile<Book>
    private let state: Locked<Book>

    init(dataDirectory: String) {
        file = DurableJSONFile(path: dataDirectory + "/apple-ads-names.json", empty: Book())
        // A damaged file is a cache: it is asked for again.
        state = Locked((try? file.load()) ?? Book())
    }

    var book: Book { state.withLock { $0 } }

    func campaign(_ id: Int64?) -> String? { id.flatMap { id in state.withLock { $0.campaigns[String(id)] } } }
    func adGroup(_ id: Int64?) -> String? { id.flatMap { id in state.withLock { $0.adGroups[String(id)] } } }
    func keyword(_ id: Int64?) -> String? { id.flatMap { id in state.withLock { $0.keywords[String(id)] } } }

    /// Takes what a refresh learned (whole or in part), and saves it.
    func update(_ change: (inout Book) -> Void) {
        let copy = state.withLock { book -> Book in
            change(&book)
            return book
        }
        do { try file.save(copy) } catch {
            EventLog.write("apple_ads_names_not_saved", ["error": .string("\(error)")])
        }
    }

    /// An API result's id and name (`name`, or `text` for a keyword), if it has both.
    static func named(_ fields: [JSONMember], nameKey: String) -> (String, String)? {
        var id: String?, name: String?
        for field in fields {
            switch (field.key, field.value) {
            case ("id", .number(let text)), ("id", .string(let text)): id = Int64(text).map(String.init)
            case (nameKey, .string(let text)): name = String(text.prefix(maxNameLength))
            default: continue
            }
        }
        guard let id, let name, !name.isEmpty else { return nil }
        return (id, name)
    }
}
