import Primitives

/// Something with series of its own for `/metrics`. Each surface hands the operations routes its
/// sources, in the order their families are written, so that those routes know none of them.
protocol MetricsSource: Sendable {
    func prometheusText(now: Timestamp) -> String
}

