import AppDevelopers
import HTTPServer
import Postbacks
import RecordLog

/// `POST /api/postbacks/verify` (admin token): paste and verify. The body is any postback (a
/// SKAdNetwork JSON, an AdAttributionKit JSON or a bare JWS); the answer is what the endpoint
/// makes of it (`PostbackInspection`), and nothing is stored. Admin only: whether the ledger has
/// seen a postback is about every app's postbacks, not one advertiser's.
struct PostbackInspectionRoutes: SurfaceRoutes {
    let context: HandlerContext
    let keyring: PostbackKeyring
    let ledger: PostbackLedger
    let store: RecordLog
    let book: AppRegistryStore
    let developmentMode: Bool
    /// Larger than any postback the well-known paths take, so that an over-long paste is told so.
    let maxBytes: Int
    static let path = "/api/postbacks/verify"

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("paste and verify", gate: bearer, routes: [
                // A signature check and perhaps a read of the key tables: a worker's, not the loop's.
                Route(.exact(Self.path), methods: ["POST"], workers: workers, answer: verify),
            ]),
        ]
    }

    func verify(_ request: HTTPRequest) throws -> HTTPResponse {
        guard request.body.count <= maxBytes else {
            throw Problem(status: 413, rule: "body_too_large", field: "body",
                          detail: "\(request.body.count) bytes; a postback the well-known paths take is at most \(maxBytes)")
        }
        let inspection = try PostbackInspection.inspect(request.body, keyring: keyring, ledger: ledger, developmentMode: developmentMode) { key in
            guard let archive = ledger.archive else { return [] }
            return (try? archive.earlier(duplicateKey: key, hash: DuplicateKeyHash(key), in: store)) ?? []
        }
        return JSONResponse.make(200, inspection.json(book.registry))
    }
}
