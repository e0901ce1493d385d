import Primitives

/// What the replay checks hold, in `/metrics`: the tokens remembered, exactly or in a filter, and
/// the worst filter's false-positive rate.
extension TokenChecks: MetricsSource {
    func prometheusText(now: Timestamp) -> String {
        let memory = self.memory
        var out = "# HELP attribution_tokens_remembered Verified PCM tokens kept to catch replays (dropped with their key).\n"
        out += "# TYPE attribution_tokens_remembered gauge\n"
        out += "attribution_tokens_remembered \(memory.tokens)\n"
        out += "# HELP attribution_tokens_remembered_approximately Of those, the ones held in a fixed-size Bloom filter, once their key's exact set was full.\n"
        out += "# TYPE attribution_tokens_remembered_approximately gauge\n"
        out += "attribution_tokens_remembered_approximately \(memory.approximate)\n"
        out += "# HELP attribution_token_filter_false_positive_ratio The highest share of fresh tokens a key's filter quarantines as possibly replayed.\n"
        out += "# TYPE attribution_token_filter_false_positive_ratio gauge\n"
        out += "attribution_token_filter_false_positive_ratio \(memory.worstFalsePositiveRate)\n"
        return out
    }
}
