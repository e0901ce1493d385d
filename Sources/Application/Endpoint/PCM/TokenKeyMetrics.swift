import Primitives

/// The token keys in `/metrics`: each key's state, when each was made and began to be served, and
/// when each site's next key comes (with `--token-key-rotation-days`, or one scheduled by hand).
struct TokenKeyMetrics: MetricsSource {
    let keys: TokenKeyStore
    let rotation: TokenKeyRotation?

    func prometheusText(now: Timestamp) -> String {
        let all = keys.all.sorted { ($0.site, $0.servesFrom.millisecondsSinceEpoch) < ($1.site, $1.servesFrom.millisecondsSinceEpoch) }
        var out = "# HELP attribution_token_key_info The sites' PCM token keys by key id: served (signs now), scheduled, or retired (verifies only).\n"
        out += "# TYPE attribution_token_key_info gauge\n"
        for key in all {
            out += "attribution_token_key_info{site=\"\(key.site)\",key_id=\"\(key.keyID)\",state=\"\(keys.state(of: key, at: now).rawValue)\"} 1\n"
        }
        out += "# HELP attribution_token_key_created_timestamp_seconds When each PCM token key was made (Unix seconds).\n"
        out += "# TYPE attribution_token_key_created_timestamp_seconds gauge\n"
        for key in all {
            out += "attribution_token_key_created_timestamp_seconds{site=\"\(key.site)\",key_id=\"\(key.keyID)\"} \(key.createdAt.millisecondsSinceEpoch / 1000)\n"
        }
        out += "# HELP attribution_token_key_serves_from_timestamp_seconds When each PCM token key is, or was, first served (Unix seconds).\n"
        out += "# TYPE attribution_token_key_serves_from_timestamp_seconds gauge\n"
        for key in all {
            out += "attribution_token_key_serves_from_timestamp_seconds{site=\"\(key.site)\",key_id=\"\(key.keyID)\"} \(key.servesFrom.millisecondsSinceEpoch / 1000)\n"
        }
        out += "# HELP attribution_token_key_next_rotation_timestamp_seconds When each served site's next key is served (Unix seconds; 0: none scheduled and no --token-key-rotation-days).\n"
        out += "# TYPE attribution_token_key_next_rotation_timestamp_seconds gauge\n"
        for site in keys.servedSites.sorted() {
            let next = rotation?.nextRotation(for: site) ?? keys.scheduledSuccessor(for: site)?.servesFrom
            out += "attribution_token_key_next_rotation_timestamp_seconds{site=\"\(site)\"} \((next?.millisecondsSinceEpoch ?? 0) / 1000)\n"
        }
        return out
    }
}
