import Primitives

/// Every spend row given, one per day, app, ad network and campaign: a later upload of the same
/// key replaces its amount, so that sending a corrected file again is safe. A value type with
/// every rule and no I/O.
public struct SpendSheet: Sendable, Equatable, Codable {
    public private(set) var rows: [SpendRow] = []

    /// Rows one site's apps keep at most: a year of 68 campaigns a day. Spend is given by hand or
    /// by a marketer's script; a bound per site keeps one advertiser's script gone wrong from
    /// filling memory and disk, and from locking the others out (the sites are the operator's).
    public static let maxRowsPerSite = 25_000

    public init() {}

    /// Adds `new`, replacing rows of the same key. Returns how many it replaced. All or nothing:
    /// past the bound, nothing changes.
    @discardableResult
    public mutating func merge(_ new: [SpendRow]) throws(RequestProblem) -> Int {
        var index: [SpendRow.Key: Int] = [:]
        for (i, row) in rows.enumerated() { index[row.key] = i }
        var copy = rows
        var replaced = 0
        for row in new {
            if let i = index[row.key] {
                copy[i] = row
                replaced += 1
            } else {
                index[row.key] = copy.count
                copy.append(row)
            }
        }
        var perSite: [String: Int] = [:]
        for row in copy { perSite[row.site, default: 0] += 1 }
        for site in Set(new.map(\.site)).sorted() where perSite[site, default: 0] > Self.maxRowsPerSite {
            throw RequestProblem(.conflict, rule: "spend_full", field: nil,
                                 detail: "the spend of \(site)'s apps is kept for at most \(Self.maxRowsPerSite) days × campaigns, and this upload would go past it; remove old periods first (DELETE /api/spend?from=&to=)")
        }
        rows = copy
        return replaced
    }

    /// Removes the rows of `days` that `owned` says belong to the caller; returns how many.
    @discardableResult
    public mutating func remove(days: ClosedRange<Int32>, where owned: (SpendRow) -> Bool) -> Int {
        let before = rows.count
        rows.removeAll { days.contains($0.day) && owned($0) }
        return before - rows.count
    }
}
