/// A response. The server adds `Date`, `Content-Length` (or chunked framing) and `Connection`.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Body
    /// A word for the access log (a rejection rule, say); never sent to the client.
    public var logNote: String?

    public enum Body: Sendable {
        case bytes([UInt8])
        /// Produced piece by piece as the socket drains, sent chunked (close-delimited to HTTP/1.0).
        case stream(any HTTPBodyStream)
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = .bytes(body)
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), stream: any HTTPBodyStream) {
        self.status = status
        self.headers = headers
        self.body = .stream(stream)
    }

    /// A plain-text response, for the few answers that need no structure.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }
}

/// What a streamed body has for the socket now.
public enum HTTPBodyPiece: Sendable, Equatable {
    case bytes([UInt8])
    /// Nothing yet: the stream calls the `whenReady` it was given once it has more.
    case pending
    case end
}

/// A body produced on demand, so that a large export never sits whole in memory.
///
/// `next` is called on the server's event-loop thread whenever the socket can take more, and
/// must return at once: a body that takes work to produce is made elsewhere
/// (`BackgroundBodyStream`) and answers `.pending` until it has a piece.
public protocol HTTPBodyStream: AnyObject, Sendable {
    func next(maxBytes: Int) -> HTTPBodyPiece
    /// Called once, on the loop, before the first `next`: after a `.pending`, `ready` is to be
    /// called (from any thread) once there is more.
    func whenReady(_ ready: @escaping @Sendable () -> Void)
    /// The connection will ask no more (its client went away, or the server stops).
    func cancel()
}

extension HTTPBodyStream {
    public func whenReady(_ ready: @escaping @Sendable () -> Void) {}
    public func cancel() {}
}

enum HTTPStatusPhrase {
    static func phrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}
