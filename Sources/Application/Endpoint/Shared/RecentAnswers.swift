/// The last few answers given for names, looked at before a dictionary: reports name two or three
/// short names (sites, a campaign), mostly those of the report before, and comparing a short name
/// costs less than hashing it. Oldest answer out first.
struct RecentAnswers<Value> {
    static var capacity: Int { 4 }
    private var entries: [(name: String, value: Value)] = []
    private var next = 0

    func answer(for name: String) -> Value? {
        for entry in entries where entry.name == name { return entry.value }
        return nil
    }

    mutating func remember(_ name: String, _ value: Value) {
        if entries.count < Self.capacity {
            entries.append((name, value))
        } else {
            entries[next] = (name, value)
            next = (next + 1) % Self.capacity
        }
    }
}

extension RecentAnswers: Sendable where Value: Sendable {}
