import HTTPServer

/// What the demo and the tests wait for, and ask in process.
extension EndpointServer {
    /// Waits until every Apple Ads call due at the clock's time is made and recorded (the demo).
    @discardableResult
    public func waitUntilAppleAdsSettled(timeout: Double = 30) -> Bool {
        appleAds.waitUntilSettled(timeout: timeout)
    }

    /// Waits until the token keys a first start makes are made (the demo).
    public func waitUntilTokenKeysAreMade() {
        tokenKeys.waitForGeneration()
    }

    /// Waits until the summary has been rebuilt from the log after `start` (tests and the demo).
    public func waitUntilSummaryIsReady() {
        summaryRebuild.waitUntilDone()
    }

    /// Waits until the postback ledger and the Apps view are whole: at once unless the start read
    /// them again in the background (`PostbackRebuild`).
    public func waitUntilPostbacksReady() {
        postbackRebuild.waitUntilDone()
    }

    /// Waits until the Apple Ads outbox knows every token: at once unless the start left its
    /// replay to the background.
    public func waitUntilAppleAdsReady() {
        appleAds.waitUntilReady()
    }

    /// What became of the summary's checkpoint at start, once the summary is ready: `used`,
    /// `missing`, `stale` (the log no longer begins as it did) or `damaged…`.
    public var summaryCheckpoint: String? { summaryRebuild.checkpointOutcome }

    /// Answers `request` as a connection's would be answered, without the socket: the same
    /// event loop, route table, turn and commit (`HTTPServer.respond(to:)`). Nil when the answer
    /// was withdrawn (a connection would have closed) or the server is not running.
    func respond(to request: HTTPRequest) -> HTTPResponse? {
        http.respond(to: request)
    }
}
