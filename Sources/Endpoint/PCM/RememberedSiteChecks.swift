import Locking
import Primitives

/// `SiteRules.check`, remembering answers: an endpoint sees the same few sites in report after
/// report, and the list lookup is most of a report's validation cost. The memo forgets everything
/// when full rather than tracking use: real traffic names few sites, and a flood of random names
/// must not grow memory.
final class RememberedSiteChecks: SiteChecking {
    private struct Answer {
        var site: String
        var violation: SiteRules.Violation?
    }

    private struct Memo {
        /// The last few sites checked, looked at before the dictionary: a report names two sites
        /// and the next report mostly the same two, and comparing a short name costs less than
        /// hashing it.
        var recent: [Answer] = []
        var next = 0
        var all: [String: SiteRules.Violation?] = [:]

        func recentAnswer(_ site: String) -> SiteRules.Violation?? {
            for answer in recent where answer.site == site { return .some(answer.violation) }
            return nil
        }

        mutating func remember(_ site: String, _ violation: SiteRules.Violation?) {
            let answer = Answer(site: site, violation: violation)
            if recent.count < RememberedSiteChecks.recentCount {
                recent.append(answer)
            } else {
                recent[next] = answer
                next = (next + 1) % RememberedSiteChecks.recentCount
            }
        }
    }

    private let rules: SiteRules
    private let memo = Locked(Memo())
    static let capacity = 4096
    static let recentCount = 4

    init(_ rules: SiteRules) {
        self.rules = rules
    }

    func check(_ site: String) -> SiteRules.Violation? {
        let known = memo.withLock { memo -> SiteRules.Violation?? in
            if let recent = memo.recentAnswer(site) { return recent }
            guard let known = memo.all[site] else { return nil }
            memo.remember(site, known)
            return known
        }
        if let known { return known }
        let answer = rules.check(site)
        memo.withLock {
            if $0.all.count >= Self.capacity { $0.all.removeAll(keepingCapacity: true) }
            $0.all[site] = .some(answer)
            $0.remember(site, answer)
        }
        return answer
    }
}
