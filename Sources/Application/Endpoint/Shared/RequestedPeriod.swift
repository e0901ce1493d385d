import HTTPServer
import Primitives
import SiteOwners

/// A period asked for in the query: `from` and `to` (UTC days, both included), or `since` and
/// `until` (RFC 3339 instants, `until` excluded); either end may be left open.
enum RequestedPeriod {
    /// `since` and `until` (RFC 3339 instants), or `from` and `to` (UTC days, both included, as
    /// the summaries and the page take them): all optional, the two kinds not mixed.
    static func parse(_ request: HTTPRequest, alsoTaking others: Set<String>) throws(Problem) -> (since: Timestamp?, until: Timestamp?) {
        var since: Timestamp?, until: Timestamp?
        var days = false, instants = false
        var firstDay: Int32?, lastDay: Int32?
        for (name, value) in request.queryItems {
            switch name {
            case "since", "until":
                guard let time = Timestamp(rfc3339: value) else {
                    throw Problem(status: 400, rule: "invalid_time", field: name,
                                  detail: "\(name) must be an RFC 3339 time such as 2026-11-20T10:00:00Z")
                }
                instants = true
                if name == "since" { since = time } else { until = time }
            case "from", "to":
                guard let day = SummaryQuery.day(value) else {
                    throw Problem(status: 400, rule: "invalid_date", field: name, detail: "\(name) must be a date such as 2026-11-20")
                }
                days = true
                // A day is [its midnight, the next midnight) in UTC: `to` includes its whole day.
                let start = Timestamp(millisecondsSinceEpoch: Int64(day) * TimingModel.day)
                if name == "from" { (since, firstDay) = (start, day) } else { (until, lastDay) = (start.adding(milliseconds: TimingModel.day), day) }
            case let other where others.contains(other): continue
            default:
                throw Problem(status: 400, rule: "unknown_parameter", field: name,
                              detail: "unknown query parameter \"\(name)\"; use from and to (days), or since and until (instants)" + others.sorted().map { ", and \($0)" }.joined())
            }
        }
        if days && instants {
            throw Problem(status: 400, rule: "conflicting_period", field: "since",
                          detail: "give the period as from and to (UTC days, both included) or as since and until (RFC 3339 instants), not both")
        }
        if let firstDay, let lastDay, lastDay < firstDay {
            throw Problem(status: 400, rule: "invalid_period", field: "to", detail: "to must not be before from")
        }
        if let since, let until, until < since {
            throw Problem(status: 400, rule: "invalid_period", field: "until", detail: "until must not be before since")
        }
        return (since, until)
    }
}
