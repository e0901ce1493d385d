import HTTPServer
import PCM
import Primitives

/// PCM's two fraud-prevention paths, as browsers call them: the site's token key
/// (`get-token-public-key/`) and the blind signature of a token (`sign-unlinkable-token/`).
///
/// An RSA-4096 signature takes milliseconds, so it never runs on the event loop: `pool` has a
/// thread per core (SCHED_IDLE, so that the loop takes its core back the moment it wakes) and a
/// bounded queue; past the bound the answer is 503 with Retry-After, so that a flood of signing
/// requests cannot slow reports.
/// Serving the key needs no signature, but the key may still be being made on first start, so it
/// too is answered from the pool when it is not ready.
struct TokenSigning: Sendable {
    let keys: TokenKeyStore
    let pool: WorkerPool
    let context: HandlerContext

    func publicKey(_ request: HTTPRequest, responder: HTTPResponder) throws {
        let site = try servedSite(request)
        if let key = keys.servedKey(for: site) { return responder.respond(Self.publicKeyAnswer(key)) }
        let keys = self.keys
        guard pool.submit({
            guard let key = keys.servedKey(for: site, waiting: true) else {
                return responder.respond(Problem(status: 503, rule: "token_key_unavailable",
                                                 detail: "\(site) has no token key; see the endpoint's log").response)
            }
            responder.respond(Self.publicKeyAnswer(key))
        }) else { return responder.respond(backlogged.response) }
    }

    func sign(_ request: HTTPRequest, responder: HTTPResponder) throws {
        let site = try servedSite(request)
        let tokenRequest = try UnlinkableTokenRequest.read(request.body).get()
        let (keys, context, body) = (self.keys, self.context, request.body)
        guard pool.submit({
            guard let key = keys.servedKey(for: site, waiting: true) else {
                return responder.respond(Problem(status: 503, rule: "token_key_unavailable",
                                                 detail: "\(site) has no token key; see the endpoint's log").response)
            }
            guard let signature = key.signing.blindSignature(for: tokenRequest.blindedMessage) else {
                let field = tokenRequest.side.rawValue + "_unlinkable_token"
                return context.refuse(Problem(status: 422, rule: "token_not_below_modulus", field: field,
                                              detail: "\(field) is not below the modulus of \(site)'s key \(key.keyID)"),
                                      site: site, body: body, responder: responder)
            }
            context.metrics.tokenSigned(tokenRequest.side)
            responder.respond(JSONResponse.make(200, "{\"unlinkable_token\":\"\(Base64URL.encode(signature))\"}"))
        }) else { return responder.respond(backlogged.response) }
    }

    /// Answered, not thrown: a full queue is no refusal of the request, and is not kept in the
    /// rejection ring.
    private var backlogged: Problem {
        Problem(status: 503, rule: "signing_backlogged", detail: "\(pool.maxWaiting ?? 0) token signatures are waiting; ask again later")
    }

    static func publicKeyAnswer(_ key: TokenKeyStore.Key) -> HTTPResponse {
        JSONResponse.make(200, "{\"token_public_key\":\"\(key.served)\"}")
    }

    /// The site the browser asked, which must be served, and with a key: a development server
    /// without `--site`, which takes any name, has keys for none.
    private func servedSite(_ request: HTTPRequest) throws(Problem) -> String {
        let site = try context.servedSite(of: request, what: "the request")
        guard keys.servedSites.contains(site) else { throw ServedSites.notServed(what: "the request", host: site) }
        return site
    }
}
