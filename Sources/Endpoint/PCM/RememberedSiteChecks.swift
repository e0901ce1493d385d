import Locking
import Primitives

/// `SiteRules.check`, remembering answers: an endpoint sees the same few sites in report after
/// report, and the list lookup is most of a report's validation cost. The memo forgets everything
/// when full rather than tracking use: real traffic names few sites, and a flood of random names
/// must not grow memory.
final class RememberedSiteChecks: SiteChecking {
    private let rules: SiteRules
    private let answers = Locked<[String: SiteRules.Violation?]>([:])
    static let capacity = 4096

    init(_ rules: SiteRules) {
        self.rules = rules
    }

    func check(_ site: String) -> SiteRules.Violation? {
        if let known = answers.withLock({ $0[site] }) { return known }
        let answer = rules.check(site)
        answers.withLock {
            if $0.count >= Self.capacity { $0.removeAll(keepingCapacity: true) }
            $0[site] = .some(answer)
        }
        return answer
    }
}
