import HTTPServer
import RecordLog

/// The route table: every surface's groups, each declared in its surface's folder. The table of
/// every path, its methods and its token is in docs/ARCHITECTURE.md ("Surfaces and the route
/// table"), checked against `Router.table` by `ArchitectureDocumentTests`.
///
/// "Token" is the admin token or a viewer token (`AccessControl`): a viewer token may use GET and
/// HEAD (and `POST /api/plist-check`) and is refused the rest with 403. Anything else is 404; a
/// known path with another method is 405 with `Allow`. Never sets or reads a cookie.
struct EndpointRoutes: HTTPHandler {
    let router: Router
    let store: RecordLog
    /// Takes the summary's checkpoint when one is due, at the end of a turn (after its commit).
    let checkpointer: SummaryCheckpointer?
    /// Postbacks waiting for their signature check: each turn takes up its share.
    let postbacks: PostbackHandler?
    let context: HandlerContext

    init(surfaces: [RouteGroup], store: RecordLog, publicDirectory: String?, checkpointer: SummaryCheckpointer?,
         postbacks: PostbackHandler? = nil, context: HandlerContext) {
        let publicFiles = publicDirectory.map { StaticFiles(directory: $0) }
        router = Router(surfaces, methodNotAllowed: Problem.methodNotAllowed, refused: { context.answer(refusal: $1, to: $0) },
                        fallback: { request, responder in
            // The summary page's files; a method they do not take is 405, any other path 404.
            // Answered, not thrown: a path nobody serves is no refusal of a device's or browser's
            // request, and is not kept in the rejection ring even under /.well-known/.
            guard let file = publicFiles?.response(path: request.path, ifNoneMatch: request.headers["If-None-Match"]) else {
                return responder.respond(Problem.notFound(request.path).response)
            }
            guard request.method == "GET" || request.method == "HEAD" else {
                return responder.respond(Problem.methodNotAllowed(request, allow: "GET, HEAD"))
            }
            responder.respond(file)
        })
        self.store = store
        self.checkpointer = checkpointer
        self.postbacks = postbacks
        self.context = context
    }

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        // Two rules for every path, before any path reads its host or its query: the host is a
        // host, and no query parameter is given twice. Refused on any path, they are kept with
        // the URL they were sent to.
        do {
            try RequestedHost.check(request, trustedProxies: context.trustedProxies)
            if let name = request.repeatedQueryParameter {
                throw Problem(status: 400, rule: "repeated_query_parameter", field: name,
                              detail: "the query parameter \(name) appears more than once; give each parameter once")
            }
        } catch {
            let problem = Problem(refusal: error)
            context.record(problem, site: nil, kept: Array(request.target.utf8.prefix(1024)))
            return responder.respond(problem.response)
        }
        router.route(request, responder: responder)
    }

    /// The turn's reports, triggers and postbacks go to disk together, and their answers go out
    /// in this turn: prepared while the flush is in flight, sent by the event loop after this
    /// returns, when the flush has said whether it held (`AnswerOnCommit`).
    func endTurn() -> Bool {
        postbacks?.drainForTurn()
        store.commitQueued(overlappingFlush: true)
        checkpointer?.turnEnded()
        return postbacks?.hasReady ?? false
    }
}
