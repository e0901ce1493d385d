#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sizes past which a request is refused rather than buffered.
public struct HTTPLimits: Sendable {
    public var maxRequestLineBytes = 8 * 1024
    /// The whole head: request line and header fields.
    public var maxHeadBytes = 16 * 1024
    public var maxHeaderCount = 100
    public var maxBodyBytes = 64 * 1024

    public init() {}
}

/// A request that cannot be read. The connection answers `status` and closes: after a framing
/// error nothing later on the connection can be trusted.
public struct HTTPParseError: Error, Sendable, Equatable {
    public var status: Int
    public var message: String

    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// An incremental HTTP/1.1 request parser (RFC 9112). Pure: it reads bytes, keeps its state
/// between calls, and never touches a socket, so every framing rule is testable in isolation.
public struct HTTPRequestParser {
    public enum Event: Sendable {
        /// Feed more bytes.
        case needMore
        /// The head asked for `100 Continue` before sending its body.
        case expectContinue
        case request(HTTPRequest)
    }

    enum State {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(count: Int)
    }

    public let limits: HTTPLimits
    let remoteAddress: String
    var state = State.head
    var pending: HTTPRequest?
    /// How far the search for the end of the head has already looked, so a head that arrives a
    /// byte at a time is scanned once, not once per byte.
    var scanned = 0

    public init(limits: HTTPLimits = HTTPLimits(), remoteAddress: String = "") {
        self.limits = limits
        self.remoteAddress = remoteAddress
    }

    /// True while part of a request has been read but not all of it.
    public var isMidRequest: Bool {
        if case .head = state { return scanned > 0 }
        return true
    }

    /// Parses from `buffer[start...]`, advancing `start` past what it consumed.
    public mutating func next(_ buffer: [UInt8], start: inout Int) throws(HTTPParseError) -> Event {
        while true {
            switch state {
            case .head:
                switch try parseHead(buffer, start: &start) {
                case .incomplete: return .needMore
                case .readBody: continue
                case .event(let event): return event
                }
            case .fixedBody(let remaining):
                let take = min(remaining, buffer.count - start)
                pending!.body.append(contentsOf: buffer[start..<start + take])
                start += take
                if take == remaining { return finish() }
                state = .fixedBody(remaining: remaining - take)
                return .needMore
            case .chunkSize:
                guard let line = try line(buffer, start: &start, limit: 1024, what: "chunk size line") else { return .needMore }
                let size = try chunkSize(line)
                if size == 0 {
                    state = .trailers(count: 0)
                } else {
                    guard pending!.body.count + size <= limits.maxBodyBytes else {
                        throw HTTPParseError(413, "the chunked body exceeds \(limits.maxBodyBytes) bytes")
                    }
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let take = min(remaining, buffer.count - start)
                pending!.body.append(contentsOf: buffer[start..<start + take])
                start += take
                guard take == remaining else {
                    state = .chunkData(remaining: remaining - take)
                    return .needMore
                }
                state = .chunkDataEnd
            case .chunkDataEnd:
                guard buffer.count - start >= 2 else { return .needMore }
                guard buffer[start] == 0x0D, buffer[start + 1] == 0x0A else {
                    throw HTTPParseError(400, "chunk data is not followed by CRLF")
                }
                start += 2
                state = .chunkSize
            case .trailers(let count):
                guard let line = try line(buffer, start: &start, limit: limits.maxRequestLineBytes, what: "trailer field") else {
                    return .needMore
                }
                if line.isEmpty { return finish() }
                // Trailer fields are read and dropped: nothing here needs them.
                guard count < limits.maxHeaderCount, line.contains(UInt8(ascii: ":")) else {
                    throw HTTPParseError(400, "invalid or too many trailer fields")
                }
                state = .trailers(count: count + 1)
            }
        }
    }

    private mutating func finish() -> Event {
        state = .head
        return .request(pending.take()!)  // moved out, not copied: a request holds several buffers
    }

    /// Reads one CRLF-terminated line, or nil when it has not fully arrived.
    private func line(_ buffer: [UInt8], start: inout Int, limit: Int, what: String) throws(HTTPParseError) -> ArraySlice<UInt8>? {
        var i = start
        let end = min(buffer.count, start + limit + 2)
        while i < end {
            if buffer[i] == 0x0A {
                guard i > start, buffer[i - 1] == 0x0D else { throw HTTPParseError(400, "\(what) ends with a bare LF") }
                let line = buffer[start..<(i - 1)]
                start = i + 1
                return line
            }
            i += 1
        }
        if buffer.count - start > limit + 1 { throw HTTPParseError(400, "\(what) is longer than \(limit) bytes") }
        return nil
    }

    private func chunkSize(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        var size = 0
        var digits = 0
        for c in line {
            if c == UInt8(ascii: ";") { break }  // chunk extensions are ignored
            guard let v = PercentDecoding.hex(c) else { throw HTTPParseError(400, "invalid chunk size") }
            digits += 1
            guard digits <= 8 else { throw HTTPParseError(413, "chunk size is too large") }
            size = size << 4 | Int(v)
        }
        guard digits > 0 else { throw HTTPParseError(400, "empty chunk size") }
        return size
    }

    // MARK: - Head

    private enum HeadResult { case incomplete, readBody, event(Event) }

    private mutating func parseHead(_ buffer: [UInt8], start: inout Int) throws(HTTPParseError) -> HeadResult {
        // RFC 9112 §2.2: ignore empty lines before a request line, however they are split up.
        while buffer.count - start >= 2, buffer[start] == 0x0D, buffer[start + 1] == 0x0A {
            start += 2
            scanned = max(0, scanned - 2)
        }
        let available = buffer.count - start
        let headEnd = try Self.findHeadEnd(buffer, start: start, from: start + max(0, scanned - 3))
        guard let headEnd else {
            scanned = available
            let requestLineLength = buffer[start...].firstIndex(of: 0x0A).map { $0 - start } ?? available
            if requestLineLength > limits.maxRequestLineBytes + 1 {
                throw HTTPParseError(414, "the request line is longer than \(limits.maxRequestLineBytes) bytes")
            }
            if available > limits.maxHeadBytes {
                throw HTTPParseError(431, "the request head is larger than \(limits.maxHeadBytes) bytes")
            }
            if available > 0 && buffer[start] != UInt8(ascii: "\r") && !Self.isTokenByte(buffer[start]) {
                throw HTTPParseError(400, "the request line does not start with a method")
            }
            return .incomplete
        }
        guard headEnd - start <= limits.maxHeadBytes else {
            throw HTTPParseError(431, "the request head is larger than \(limits.maxHeadBytes) bytes")
        }
        let head = buffer[start..<headEnd]
        start = headEnd + 4
        scanned = 0
        var (request, fields) = try parseHeadLines(head)
        let framing = try bodyFraming(request, fields)
        let expectsContinue = fields.expect > 0 ? try expectation(request) : false
        switch framing {
        case .none:
            return .event(.request(request))
        case .length(let n):
            // What the client says it will send, not what it has: reserved only up to what a
            // first read brings, so that a large Content-Length costs nothing until bytes arrive.
            request.body.reserveCapacity(min(n, 64 * 1024))
            pending = request
            state = .fixedBody(remaining: n)
        case .chunked:
            pending = request
            state = .chunkSize
        }
        return expectsContinue ? .event(.expectContinue) : .readBody
    }

    /// The index of the CRLFCRLF that ends the head, or nil if it has not arrived. Every LF
    /// must follow a CR. Jumps from LF to LF with `memchr`: a head has a handful of lines, and
    /// this touches every byte of every head.
    private static func findHeadEnd(_ buffer: [UInt8], start: Int, from: Int) throws(HTTPParseError) -> Int? {
        let found: Int? = buffer.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress else { return nil }
            let count = b.count
            var i = from
            while i < count, let hit = memchr(base + i, 0x0A, count - i) {
                let lf = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                if lf == start || b[lf - 1] != 0x0D { return -1 }
                if lf + 2 < count && b[lf + 1] == 0x0D && b[lf + 2] == 0x0A { return lf - 1 }
                i = lf + 1
            }
            return nil
        }
        if found == -1 { throw HTTPParseError(400, "a line of the request head ends with a bare LF") }
        return found
    }

    private enum Framing { case none, length(Int), chunked }

    private func bodyFraming(_ request: HTTPRequest, _ fields: FieldCounts) throws(HTTPParseError) -> Framing {
        // The common request has one plain Content-Length and no Transfer-Encoding; read that
        // from the bytes. Anything else takes the general path below.
        if fields.contentLength == 0 && fields.transferEncoding == 0 { return .none }
        if fields.contentLength == 1, fields.transferEncoding == 0,
           let n = request.headers.withFirstValue("Content-Length", Self.plainDecimal) ?? nil {
            guard n <= limits.maxBodyBytes else {
                throw HTTPParseError(413, "the body of \(n) bytes exceeds the limit of \(limits.maxBodyBytes) bytes")
            }
            return n == 0 ? .none : .length(n)
        }
        return try generalBodyFraming(request)
    }

    /// 1 to 18 ASCII digits and nothing else, or nil.
    private static func plainDecimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var n = 0
        for c in bytes {
            guard c >= 48 && c <= 57 else { return nil }
            n = n * 10 + Int(c - 48)
        }
        return n
    }

    private func generalBodyFraming(_ request: HTTPRequest) throws(HTTPParseError) -> Framing {
        var transferEncodings: [String] = []
        var contentLengths: [String] = []
        for field in request.headers.fields {
            if HTTPHeaders.equalNames(field.name, "Content-Length") {
                contentLengths.append(field.value)
            } else if HTTPHeaders.equalNames(field.name, "Transfer-Encoding") {
                transferEncodings.append(field.value)
            }
        }
        if !transferEncodings.isEmpty {
            // RFC 9112 §6.1: both at once is how requests are smuggled.
            guard contentLengths.isEmpty else {
                throw HTTPParseError(400, "a request must not carry both Transfer-Encoding and Content-Length")
            }
            guard request.version == .http1_1 else {
                throw HTTPParseError(400, "Transfer-Encoding is not allowed in an HTTP/1.0 request")
            }
            let codings = transferEncodings.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces.lowercased() }
            // RFC 9112 suggests 501 here and 505 for an unknown version; this server answers
            // every problem caused by the client with a 4xx, so that 5xx always means "ours".
            guard codings == ["chunked"] else {
                throw HTTPParseError(400, "only the chunked transfer coding is supported; got \(codings.joined(separator: ", "))")
            }
            return .chunked
        }
        guard !contentLengths.isEmpty else { return .none }
        // Repeated or listed lengths are accepted only when they all agree (RFC 9112 §6.3).
        let values = contentLengths.count == 1 && !contentLengths[0].utf8.contains(UInt8(ascii: ","))
            ? [Substring(contentLengths[0])]
            : contentLengths.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map { $0.trimmingSpaces }
        guard let first = values.first, values.allSatisfy({ $0 == first }) else {
            throw HTTPParseError(400, "conflicting Content-Length values")
        }
        guard !first.isEmpty, first.utf8.count <= 18, first.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(first) else {
            throw HTTPParseError(400, "Content-Length is not a decimal number")
        }
        guard n <= limits.maxBodyBytes else {
            throw HTTPParseError(413, "the body of \(n) bytes exceeds the limit of \(limits.maxBodyBytes) bytes")
        }
        return n == 0 ? .none : .length(n)
    }

    private func expectation(_ request: HTTPRequest) throws(HTTPParseError) -> Bool {
        guard let expect = request.headers["Expect"] else { return false }
        guard expect.trimmingSpaces.lowercased() == "100-continue" else {
            throw HTTPParseError(417, "unsupported expectation \"\(expect)\"")
        }
        return request.version == .http1_1
    }

    /// How many fields of a head have the names that decide its framing, counted as the fields
    /// are read so that no name is looked up again afterwards.
    struct FieldCounts {
        var host = 0
        var contentLength = 0
        var transferEncoding = 0
        var expect = 0

        mutating func count(_ name: UnsafeBufferPointer<UInt8>) {
            switch name.count {
            case 4 where Self.named(name, "host"): host += 1
            case 6 where Self.named(name, "expect"): expect += 1
            case 14 where Self.named(name, "content-length"): contentLength += 1
            case 17 where Self.named(name, "transfer-encoding"): transferEncoding += 1
            default: break
            }
        }

        private static func named(_ name: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
            lowercase.withUTF8Buffer { HTTPHeaders.equalBytes(name, $0) }
        }
    }

    private func parseHeadLines(_ head: ArraySlice<UInt8>) throws(HTTPParseError) -> (HTTPRequest, FieldCounts) {
        // parseHead has already refused bare LFs; a CR must begin a CRLF too (RFC 9112 §2.2).
        let lineEnd = head.firstIndex(of: 0x0D) ?? head.endIndex
        if lineEnd < head.endIndex && (lineEnd + 1 == head.endIndex || head[lineEnd + 1] != 0x0A) {
            throw HTTPParseError(400, "the request head contains a bare CR")
        }
        var request = try parseRequestLine(head[head.startIndex..<lineEnd])
        var counts = FieldCounts()
        if lineEnd < head.endIndex {
            let fields = head[(lineEnd + 2)...]
            request.headers = HTTPHeaders(reservingBytes: fields.count, fields: 8)
            try fields.withUnsafeBufferPointer { (b) throws(HTTPParseError) in
                try parseFields(b, into: &request.headers, counting: &counts)
            }
        }
        if request.version == .http1_1 && counts.host != 1 {
            throw HTTPParseError(400, counts.host == 0 ? "an HTTP/1.1 request needs a Host header" : "more than one Host header")
        }
        // Absolute form: the URL's host is the request's host, and Host is ignored (RFC 9112
        // §3.2.2). It takes Host's place, so that whoever checks Host checks it.
        if let authority = Self.absoluteFormAuthority(head[head.startIndex..<lineEnd]) {
            request.headers.replace(name: "Host", value: authority)
        }
        return (request, counts)
    }

    /// `shop.example:8443` of `POST https://shop.example:8443/path HTTP/1.1`: what stands between
    /// the scheme and the path, as sent; nil for the origin form.
    static func absoluteFormAuthority(_ line: ArraySlice<UInt8>) -> String? {
        guard let space = line.firstIndex(of: 0x20), space + 1 < line.endIndex, line[space + 1] == UInt8(ascii: "h") else { return nil }
        let target = line[(space + 1)...]
        for scheme in ["http://", "https://"] where target.starts(with: scheme.utf8) {
            let start = target.startIndex + scheme.utf8.count
            let end = target[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == 0x20 || $0 == UInt8(ascii: "?") } ?? target.endIndex
            return String(decoding: target[start..<end], as: UTF8.self)
        }
        return nil
    }

    /// Reads the header lines (CRLF-separated, no final CRLF) into `headers`, counting the names
    /// that matter for framing. Works on the bytes directly: this runs for every line of every request.
    private func parseFields(_ b: UnsafeBufferPointer<UInt8>, into headers: inout HTTPHeaders,
                             counting counts: inout FieldCounts) throws(HTTPParseError) {
        var count = 0
        var lineStart = 0
        let end = b.count
        while true {
            var lineEnd = lineStart
            while lineEnd < end && b[lineEnd] != 0x0D { lineEnd += 1 }
            if lineEnd < end && (lineEnd + 1 == end || b[lineEnd + 1] != 0x0A) {
                throw HTTPParseError(400, "the request head contains a bare CR")
            }
            count += 1
            guard count <= limits.maxHeaderCount else {
                throw HTTPParseError(431, "more than \(limits.maxHeaderCount) header fields")
            }
            counts.count(try parseField(b, lineStart..<lineEnd, into: &headers))
            guard lineEnd < end else { break }
            lineStart = lineEnd + 2
        }
    }

    /// Adds one `name: value` line; returns the name.
    private func parseField(_ b: UnsafeBufferPointer<UInt8>, _ line: Range<Int>,
                            into headers: inout HTTPHeaders) throws(HTTPParseError) -> UnsafeBufferPointer<UInt8> {
        guard !line.isEmpty else { throw HTTPParseError(400, "empty header line") }
        let first = b[line.lowerBound]
        if first == 0x20 || first == 0x09 {
            throw HTTPParseError(400, "obsolete line folding is not accepted")
        }
        var colon = line.lowerBound
        // RFC 9112 §5.1: the name is a token, with no whitespace before the colon.
        while colon < line.upperBound && b[colon] != UInt8(ascii: ":") {
            guard Self.isTokenByte(b[colon]) else { throw HTTPParseError(400, "invalid header field name") }
            colon += 1
        }
        guard colon < line.upperBound else { throw HTTPParseError(400, "a header line has no ':'") }
        guard colon > line.lowerBound else { throw HTTPParseError(400, "invalid header field name") }
        var valueStart = colon + 1
        var valueEnd = line.upperBound
        while valueStart < valueEnd, b[valueStart] == 0x20 || b[valueStart] == 0x09 { valueStart += 1 }
        while valueEnd > valueStart, b[valueEnd - 1] == 0x20 || b[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        for i in valueStart..<valueEnd where (b[i] < 0x20 && b[i] != 0x09) || b[i] == 0x7F {
            throw HTTPParseError(400, "a header value contains a control character")
        }
        let name = UnsafeBufferPointer(rebasing: b[line.lowerBound..<colon])
        headers.add(name: name, value: UnsafeBufferPointer(rebasing: b[valueStart..<valueEnd]))
        return name
    }


    private func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPRequest {
        guard line.count <= limits.maxRequestLineBytes else {
            throw HTTPParseError(414, "the request line is longer than \(limits.maxRequestLineBytes) bytes")
        }
        return try line.withUnsafeBufferPointer { (b) throws(HTTPParseError) -> HTTPRequest in try parseRequestLine(b) }
    }

    /// Works on the bytes directly, like the header lines: this runs for every request.
    private func parseRequestLine(_ b: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> HTTPRequest {
        var firstSpace = -1, secondSpace = -1
        for i in 0..<b.count where b[i] == UInt8(ascii: " ") {
            if firstSpace < 0 {
                firstSpace = i
            } else if secondSpace < 0 {
                secondSpace = i
            } else {
                secondSpace = -1
                break
            }
        }
        guard firstSpace >= 0, secondSpace >= 0 else {
            throw HTTPParseError(400, "the request line is not 'METHOD target HTTP/1.1'")
        }
        let method = UnsafeBufferPointer(rebasing: b[0..<firstSpace])
        let target = UnsafeBufferPointer(rebasing: b[(firstSpace + 1)..<secondSpace])
        let version = UnsafeBufferPointer(rebasing: b[(secondSpace + 1)...])
        guard !method.isEmpty, method.allSatisfy(Self.isTokenByte) else {
            throw HTTPParseError(400, "invalid method")
        }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPParseError(400, "invalid request target")
        }
        let parsedVersion: HTTPVersion
        if version.count == 8 && version[0] == UInt8(ascii: "H") && version[1] == UInt8(ascii: "T") && version[2] == UInt8(ascii: "T")
            && version[3] == UInt8(ascii: "P") && version[4] == UInt8(ascii: "/") && version[5] == UInt8(ascii: "1")
            && version[6] == UInt8(ascii: ".") && (version[7] == UInt8(ascii: "1") || version[7] == UInt8(ascii: "0")) {
            parsedVersion = version[7] == UInt8(ascii: "1") ? .http1_1 : .http1_0
        } else {
            parsedVersion = try unsupportedVersion(version)
        }
        var targetText = String(decoding: target, as: UTF8.self)
        if target[0] != UInt8(ascii: "/") {
            // Absolute form (RFC 9112 §3.2.2): keep only the path and query.
            if targetText.hasPrefix("http://") || targetText.hasPrefix("https://") {
                let afterScheme = targetText[targetText.firstRange(of: "://")!.upperBound...]
                targetText = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/"
            } else if !(targetText == "*" && method.elementsEqual("OPTIONS".utf8)) {
                throw HTTPParseError(400, "invalid request target")
            }
        }
        return HTTPRequest(method: String(decoding: method, as: UTF8.self), target: targetText, version: parsedVersion,
                           remoteAddress: remoteAddress)
    }

    private func unsupportedVersion(_ version: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> HTTPVersion {
        let v = String(decoding: version, as: UTF8.self)
        if v.utf8.count == 8 && v.hasPrefix("HTTP/") && v.utf8.dropFirst(5).allSatisfy({ $0 == 46 || ($0 >= 48 && $0 <= 57) }) {
            throw HTTPParseError(400, "\(v) is not supported; use HTTP/1.1")
        }
        throw HTTPParseError(400, "invalid HTTP version")
    }

    /// RFC 9110 `tchar`: digits, letters and ``!#$%&'*+-.^_`|~``, as two 64-bit masks (every tchar
    /// is below 128). Every byte of every method and field name is checked.
    static func isTokenByte(_ c: UInt8) -> Bool {
        c < 64 ? tokenMaskLow >> c & 1 == 1 : c < 128 ? tokenMaskHigh >> (c - 64) & 1 == 1 : false
    }

    /// Bits 33, 35–39, 42, 43, 45, 46 (`!#$%&'*+-.`) and 48–57 (digits).
    static let tokenMaskLow: UInt64 = 0x03FF_6CFA_0000_0000
    /// Bits 65–90 (A–Z), 94–96 (`^_` and backquote), 97–122 (a–z), 124 and 126 (`|~`), less 64.
    static let tokenMaskHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE
}
