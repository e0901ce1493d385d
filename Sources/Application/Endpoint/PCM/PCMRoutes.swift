import PCM
import HTTPServer

/// Private Click Measurement's well-known paths, as browsers call them: reports, the trigger, and
/// fraud prevention's token key and signatures. Open to every browser; never sets or reads a
/// cookie, never redirects.
struct PCMRoutes: Sendable {
    static let reportPath = "/.well-known/private-click-measurement/report-attribution/"
    static let tokenKeyPath = "/.well-known/private-click-measurement/get-token-public-key/"
    static let signTokenPath = "/.well-known/private-click-measurement/sign-unlinkable-token/"

    let reports: ReportHandler
    let triggers: TriggerHandler
    let tokens: TokenSigning

    var routes: [RouteGroup] {
        [
            RouteGroup("private click measurement", routes: [
                Route(.exact(Self.reportPath), methods: ["POST"], handler: reports.handle),
                // WebKit always sends the trailing slash; people testing with curl often do not.
                Route(.exact(String(Self.reportPath.dropLast())), methods: ["POST"], handler: reports.handle),
                Route(.prefix(TriggerPath.prefix), methods: ["GET", "HEAD"], handler: triggers.handle),
                Route(.exact(Self.tokenKeyPath), methods: ["GET", "HEAD"], handler: tokens.publicKey),
                Route(.exact(String(Self.tokenKeyPath.dropLast())), methods: ["GET", "HEAD"], handler: tokens.publicKey),
                Route(.exact(Self.signTokenPath), methods: ["POST"], handler: tokens.sign),
                Route(.exact(String(Self.signTokenPath.dropLast())), methods: ["POST"], handler: tokens.sign),
            ]),
        ]
    }
}
