import Primitives

/// Every spend row given, one per day, app, ad network and campaign: a later upload of the same
/// key replaces its amount, so that sending a corrected file again is safe. A value type with
/// every rule and no I/O.
public struct SpendSheet: Sendable, Equatable, Codable {
    public private(set) var rows: [SpendRow] = []

    /// Rows the endpoint keeps at most: a year of 130 campaigns a day. Spend is given by hand or
    /// by a marketer's script; a bound keeps a script gone wrong from filling memory and disk.
    public static let maxRows = 50_000

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
        guard copy.count <= Self.maxRows else {
            throw RequestProblem(.conflict, rule: "spend_full", field: nil,
                                 detail: "the endpoint keeps at most \(Self.maxRows) spend rows and this upload would make \(copy.count); remove old periods first (DELETE /api/spend?from=&to=)")
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
