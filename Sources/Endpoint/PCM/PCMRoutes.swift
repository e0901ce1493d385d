import PCM
import Primitives
import SiteOwners
import HTTPServer

/// Private Click Measurement's well-known paths, as browsers call them: reports and the trigger.
/// Open to every browser; never sets or reads a cookie.
struct PCMRoutes: Sendable {
    static let reportPath = "/.well-known/private-click-measurement/report-attribution/"

    let reports: ReportIngest
    let triggers: TriggerIngest

    var routes: [RouteGroup] {
        [
            RouteGroup("private click measurement", routes: [
                Route(.exact(Self.reportPath), methods: ["POST"], handler: reports.handle),
                // WebKit always sends the trailing slash; people testing with curl often do not.
                Route(.exact(String(Self.reportPath.dropLast())), methods: ["POST"], handler: reports.handle),
                Route(.prefix(TriggerPath.prefix), methods: ["GET", "HEAD"], handler: triggers.handle),
            ]),
        ]
    }
}
