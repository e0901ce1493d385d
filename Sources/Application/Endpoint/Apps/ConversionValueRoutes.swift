import AppDevelopers
import HTTPServer
import Primitives

/// `POST /conversion-value`: the app asks which conversion value to set now, sending its own
/// counters (first launch, current values, event counts, revenue). Stateless: the answer comes
/// from the app's registered schema and the time, and nothing the app sends is stored or logged.
/// Only a counter per app and outcome is kept, for `/metrics`.
///
/// Open without the token, as the app calls it. Never sets or reads a cookie.
struct ConversionValueRoutes: SurfaceRoutes {
    static let path = "/conversion-value"

    let book: AppRegistryStore
    /// The app's server asks on the app's site, as the app's Info.plist names it.
    let context: HandlerContext

    var routes: [RouteGroup] {
        [
            RouteGroup("conversion values", routes: [
                Route(.exact(Self.path), methods: ["POST"], answer: answer),
            ]),
        ]
    }

    func answer(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try context.servedSite(of: request, what: "the question")
        var appID: Int?
        let registry = book.registry
        let counters: AppCounters
        do throws(RequestProblem) {
            let json = try JSONParser().parseBody(request.body)
            // A registered app's malformed counters are counted as its own, for its developer.
            if case .object(let members) = json, case .number(let text)? = members.first(where: { $0.key == "app_id" })?.value,
               let id = JSONValue.integerValue(text), registry.app(id: id) != nil {
                appID = id
            }
            counters = try AppCounters.read(json)
        } catch {
            context.metrics.conversionValueAnswered(appID: appID, outcome: error.rule)
            throw error
        }
        guard let app = registry.app(id: counters.appID) else {
            // Not counted per id: that would let anyone grow /context.metrics.
            context.metrics.conversionValueAnswered(appID: nil, outcome: "unknown_app")
            throw Problem(status: 404, rule: "unknown_app", field: "app_id",
                          detail: "app \(counters.appID) is not registered here; register it and its schema with POST /api/apps")
        }
        do throws(RequestProblem) {
            let answer = try NextConversionValue.answer(for: counters, schema: app.schema, now: now)
            let outcome = answer.status == .windowClosed ? "window_closed" : answer.window.map { "window_\($0)" } ?? "single_window"
            context.metrics.conversionValueAnswered(appID: app.appID, outcome: outcome)
            return JSONResponse.make(200, answer.json)
        } catch {
            context.metrics.conversionValueAnswered(appID: app.appID, outcome: error.rule)
            throw error
        }
    }
}
