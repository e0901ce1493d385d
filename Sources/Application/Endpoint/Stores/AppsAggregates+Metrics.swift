import Primitives

/// What the Apps view holds, in `/metrics`: the one thing besides the summary that grows with the
/// days kept.
extension AppsAggregates: MetricsSource {
    func prometheusText(now: Timestamp) -> String {
        let held = self.held
        return MetricSeries.gauge("attribution_apps_view_day_sites", "UTC days by site the Apps view counts (one per day and site).", held.days)
            + MetricSeries.gauge("attribution_apps_view_conversion_rows", "Their conversion rows (ad network, campaign, app).", held.rows)
            + MetricSeries.gauge("attribution_apps_view_conversion_bytes", "About the bytes those rows take.", held.rowBytes)
    }
}
