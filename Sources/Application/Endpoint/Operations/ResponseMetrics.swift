import HTTPServer
import Primitives

/// Answers by status code, as `attribution_http_responses_total{code="503"}`: what an alert on
/// 503s (a full queue, a full disk, the connection cap) and on 5xx reads, whichever part answered.
struct ResponseMetrics: MetricsSource {
    let responses: ResponseCounts

    func prometheusText(now: Timestamp) -> String {
        var out = "# HELP attribution_http_responses_total HTTP answers sent, by status code.\n"
        out += "# TYPE attribution_http_responses_total counter\n"
        // 503 is written from the start, at 0: a rule's increase() then sees the first burst.
        var sent = responses.sent
        if !sent.contains(where: { $0.status == 503 }) { sent.append((503, 0)); sent.sort { $0.status < $1.status } }
        for (status, count) in sent {
            out += "attribution_http_responses_total{code=\"\(status)\"} \(count)\n"
        }
        return out
    }
}
