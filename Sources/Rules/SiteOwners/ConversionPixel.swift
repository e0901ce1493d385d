import PCM
import Primitives

/// Where the conversion pixel sends the browser: the well-known trigger URL on the same host,
/// in the form WebKit accepts.
///
/// - Same-site form (the pixel is on the advertiser's own site): the redirect names the click's
///   source with `?attributionSource=https://<source>`.
/// - Cross-site form (the pixel is served by the publisher, embedded in the advertiser's page):
///   no query; the browser takes the pixel's own site as the source.
public enum ConversionPixel {
    /// The `Location` for `conversion`, on `site`: the registrable domain the pixel was requested
    /// from, as checked, never the Host header as sent. The well-known paths live on the site
    /// itself, and the redirect stays same-site with the pixel, as WebKit requires. `port` is the
    /// port the browser named, checked as a number (none behind a front on 443).
    /// `source` is the `source` parameter (an origin) for the same-site form, or nil.
    public static func location(site: String, port: Int? = nil, conversion: Conversion, source: String?,
                                siteRules: SiteRules) throws(RequestProblem) -> String {
        var location = "https://" + site + (port.map { ":\($0)" } ?? "") + TriggerPath.path(triggerData: conversion.triggerData, priority: conversion.priority)
        if let source {
            let sourceSite = try TriggerPath.sourceSite(source, field: "source", siteRules: siteRules)
            // A click is never same-site with its destination: WebKit stores no such click.
            guard sourceSite != site else {
                throw RequestProblem(.invalid, rule: "same_site", field: "source",
                                     detail: "source names \(site), the pixel's own site; it must be the site where the ad was clicked")
            }
            location += "?attributionSource=https://" + sourceSite
        }
        return location
    }
}
