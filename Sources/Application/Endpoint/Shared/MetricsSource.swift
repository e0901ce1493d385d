import Primitives

/// Something with series of its own for `/metrics`. Each surface hands the operations routes its
/// sources, in the order their families are written, so that those routes know none of them.
protocol MetricsSource: Sendable {
    func prometheusText(now: Timestamp) -> String
}

/// A source made of a closure: for series that are a feature's lines and nothing more.
struct MetricsText: MetricsSource {
    let text: @Sendable (Timestamp) -> String

    init(_ text: @escaping @Sendable (Timestamp) -> String) {
        self.text = text
    }

    func prometheusText(now: Timestamp) -> String { text(now) }
}
