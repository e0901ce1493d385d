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
    /// The `Location` for `conversion`, on `host` (the host the pixel was requested from).
    /// `source` is the `source` parameter (an origin) for the same-site form, or nil.
    public static func location(host: String, conversion: Conversion, source: String?, siteRules: SiteRules) throws(RequestProblem) -> String {
        var location = "https://" + host + TriggerPath.path(triggerData: conversion.triggerData, priority: conversion.priority)
        if let source {
            let site = try TriggerPath.sourceSite(source, field: "source", siteRules: siteRules)
            location += "?attributionSource=https://" + site
        }
        return location
    }
}
