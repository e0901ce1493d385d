import Locking
import Primitives

/// `SiteRules.check`, remembering answers: an endpoint sees the same few sites in report after
/// report, and the list lookup is most of a report's validation cost. The memo forgets everything
/// when full rather than tracking use: real traffic names few sites, and a flood of random names
/// must not grow memory.
final class RememberedSiteChecks: SiteChecking {
    private struct Memo {
        var recent = RecentAnswers<SiteRules.Violation?>()
        var all: [String: SiteRules.Violation?] = [:]
    }

    private let rules: SiteRules
    private let memo = Locked(Memo())
    static let capacity = 4096

    init(_ rules: SiteRules) {
        self.rules = rules
    }

    func check(_ site: String) -> SiteRules.Violation? {
        let known = memo.withLock { memo -> SiteRules.Violation?? in
            if let recent = memo.recent.answer(for: site) { return recent }
            guard let known = memo.all[site] else { return nil }
            memo.recent.remember(site, known)
            return known
        }
        if let known { return known }
        let answer = rules.check(site)
        memo.withLock {
            if $0.all.count >= Self.capacity { $0.all.removeAll(keepingCapacity: true) }
            $0.all[site] = .some(answer)
            $0.recent.remember(site, answer)
        }
        return answer
    }
}
