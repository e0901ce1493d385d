import HTTPServer
import Primitives

/// The app developer's well-known paths, as devices call them: copies of the winning SKAdNetwork
/// and AdAttributionKit postbacks. Open to every device; never sets or reads a cookie.
struct AppRoutes: Sendable {
    static let skadnetworkPath = "/.well-known/skadnetwork/report-attribution/"
    static let adattributionkitPath = "/.well-known/appattribution/report-attribution/"

    let postbacks: PostbackHandler

    var routes: [RouteGroup] {
        let intake = postbacks
        let skadnetwork: @Sendable (HTTPRequest, HTTPResponder) throws -> Void = { try intake.handle(.skadnetwork, $0, responder: $1) }
        let adattributionkit: @Sendable (HTTPRequest, HTTPResponder) throws -> Void = { try intake.handle(.adattributionkit, $0, responder: $1) }
        return [
            RouteGroup("app developers", routes: [
                // Devices send the trailing slash; people testing with curl often do not.
                Route(.exact(Self.skadnetworkPath), methods: ["POST"], handler: skadnetwork),
                Route(.exact(String(Self.skadnetworkPath.dropLast())), methods: ["POST"], handler: skadnetwork),
                Route(.exact(Self.adattributionkitPath), methods: ["POST"], handler: adattributionkit),
                Route(.exact(String(Self.adattributionkitPath.dropLast())), methods: ["POST"], handler: adattributionkit),
            ]),
        ]
    }
}
