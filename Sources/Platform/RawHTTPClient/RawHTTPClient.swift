import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct RawHTTPError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A parsed response as it came off the wire.
public struct RawResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking HTTP/1.1 client over one TCP connection that writes raw bytes and reads responses:
/// the live-server tests' client, and the ClickHouse export's sender, which hands it a batch of
/// rows to write in one go (URLSession on Linux passes a body through libcurl 16 KB at a time,
/// with a dispatch event for each; at full ingest that showed as much as building the rows).
/// Every read has a deadline, so a server that hangs is an error, not a hang; nothing it reads
/// can make it trap.
public final class RawHTTPClient {
    public private(set) var fd: Int32
    private var buffer: [UInt8] = []
    /// What each read lands in, made once.
    private var chunk = [UInt8](repeating: 0, count: 65536)
    /// Past this instant (`DispatchTime` nanoseconds) reads fail, however slowly bytes trickle in.
    public var deadline: UInt64 = .max
    /// Responses larger than this are refused.
    public var maxResponseBytes = 1 << 30
    /// Whether a connection reset ends a body that runs to the end of the stream, as a close does.
    /// The live tests read answers from servers that reset after answering; a client that must tell
    /// a whole answer from a cut one sets this false, and a reset is then an error.
    public var resetIsEnd = true

    /// Connects to `host` (a name or an address, IPv4 or IPv6; at most its first two addresses
    /// are tried) within `connectTimeout` seconds each (`timeout` if nil); `timeout` then bounds
    /// each read and write.
    public init(port: UInt16, host: String = "127.0.0.1", timeout: Double = 10, connectTimeout: Double? = nil) throws {
        fd = -1
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let first = found else { throw RawHTTPError("cannot resolve \(host): \(String(cString: gai_strerror(resolved)))") }
        defer { freeaddrinfo(first) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        var tried = 0
        while let address = candidate, tried < 2 {
            candidate = address.pointee.ai_next
            tried += 1
            let socketFD = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard socketFD >= 0 else { continue }
            if Self.connect(socketFD, address.pointee.ai_addr, address.pointee.ai_addrlen, timeout: connectTimeout ?? timeout, error: &lastError) {
                fd = socketFD
                break
            }
            Glibc.close(socketFD)
        }
        // Marked closed on failure, because deinit still runs when an initializer throws after
        // every property is set: closing twice would close whatever fd reused the number.
        guard fd >= 0 else { throw RawHTTPError("connect to \(host):\(port) failed: \(lastError)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        setTimeout(timeout)
    }

    /// A non-blocking connect given `timeout` seconds, then back to blocking.
    private static func connect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t, timeout: Double,
                                error: inout String) -> Bool {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        if Glibc.connect(fd, address, length) == 0 { return true }
        guard errno == EINPROGRESS else {
            error = String(cString: strerror(errno))
            return false
        }
        var poll = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ready = Glibc.poll(&poll, 1, Int32(clamping: Int64((max(0, min(timeout, 86_400)) * 1000).rounded(.up))))
        guard ready == 1 else {
            error = ready == 0 ? "timed out" : String(cString: strerror(errno))
            return false
        }
        var status: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &size)
        guard status == 0 else {
            error = String(cString: strerror(status))
            return false
        }
        return true
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Bounds each read and each write to `seconds`.
    public func setTimeout(_ seconds: Double) {
        let bounded = max(0.001, min(seconds, 86_400))
        var tv = timeval(tv_sec: Int(bounded), tv_usec: .init((bounded - bounded.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Ends the connection from another thread: a read or write blocked on it returns at once.
    public func cancel() { shutdown(fd, Int32(SHUT_RDWR)) }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { all in
            guard let base = all.baseAddress else { return }
            var offset = 0
            while offset < all.count {
                // Each send waits at most the time-out; a server that takes a little at a time
                // still meets the deadline.
                guard DispatchTime.now().uptimeNanoseconds < deadline else { throw RawHTTPError("timed out sending") }
                let n = Glibc.send(fd, base + offset, all.count - offset, Int32(MSG_NOSIGNAL))
                guard n > 0 else {
                    if n < 0, errno == EINTR { continue }
                    throw RawHTTPError(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? "timed out sending" : "send failed: \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
    }

    /// Half-closes: the server sees end of input but can still answer.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes; false at end of stream. Throws on timeout.
    private func fill() throws -> Bool {
        guard DispatchTime.now().uptimeNanoseconds < deadline else { throw RawHTTPError("timed out waiting for the server") }
        guard buffer.count < maxResponseBytes else { throw RawHTTPError("the response is larger than \(maxResponseBytes) bytes") }
        var n = 0, failure: Int32 = 0
        repeat {
            n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            failure = errno
        } while n < 0 && failure == EINTR
        if n > 0 {
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
        if n == 0 { return false }
        if failure == EAGAIN || failure == EWOULDBLOCK { throw RawHTTPError("timed out waiting for the server") }
        if failure == ECONNRESET, resetIsEnd { return false }
        throw RawHTTPError("recv failed: \(String(cString: strerror(failure)))")
    }

    /// Reads one response. `bodyExpected: false` for answers to HEAD.
    public func readResponse(bodyExpected: Bool = true) throws -> RawResponse {
        var searched = 0
        var headEnd = 0
        while true {
            if let end = findHeadEnd(from: searched) {
                headEnd = end
                break
            }
            searched = max(0, buffer.count - 3)
            guard buffer.count < 65536 else { throw RawHTTPError("a response head longer than 64 KB") }
            guard try fill() else { throw RawHTTPError("connection closed before a complete response head") }
        }
        let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = (lines.first ?? "").split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/"), let status = Int(statusParts[1]), (100...999).contains(status) else {
            throw RawHTTPError("bad status line \(String((lines.first ?? "").prefix(100)))")
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = RawResponse(status: status, headers: headers, body: [])
        if !bodyExpected || status == 204 || status == 304 || (100..<200).contains(status) { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            response.body = try readChunked()
        } else if let lengthText = response.header("Content-Length") {
            guard let length = Int(lengthText), length >= 0 else { throw RawHTTPError("bad Content-Length \(String(lengthText.prefix(40)))") }
            guard length <= maxResponseBytes else { throw RawHTTPError("the response is larger than \(maxResponseBytes) bytes") }
            while buffer.count < length { guard try fill() else { throw RawHTTPError("closed mid-body") } }
            if buffer.count == length {
                swap(&response.body, &buffer)
            } else {
                response.body = Array(buffer[0..<length])
                buffer.removeFirst(length)
            }
        } else {
            while try fill() {}
            swap(&response.body, &buffer)
        }
        return response
    }

    private func readChunked() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine()
            guard let sizeText = line.split(separator: ";", omittingEmptySubsequences: false).first,
                  let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw RawHTTPError("bad chunk size \(String(line.prefix(40)))")
            }
            if size == 0 {
                while try !readLine().isEmpty {}
                return body
            }
            guard size <= maxResponseBytes - body.count else { throw RawHTTPError("the response is larger than \(maxResponseBytes) bytes") }
            while buffer.count < size + 2 { guard try fill() else { throw RawHTTPError("closed mid-chunk") } }
            body.append(contentsOf: buffer[0..<size])
            buffer.removeFirst(size + 2)
        }
    }

    private func readLine() throws -> String {
        var searched = 0
        while true {
            if let i = buffer[searched...].firstIndex(of: 0x0A), i > 0, buffer[i - 1] == 0x0D {
                let line = String(decoding: buffer[0..<(i - 1)], as: UTF8.self)
                buffer.removeFirst(i + 1)
                return line
            }
            searched = buffer.count
            guard buffer.count < 65536 else { throw RawHTTPError("a line longer than 64 KB") }
            guard try fill() else { throw RawHTTPError("closed mid-line") }
        }
    }

    private func findHeadEnd(from start: Int) -> Int? {
        guard buffer.count >= 4, start <= buffer.count - 4 else { return nil }
        for i in start...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// True once the server has closed the connection (end of stream with nothing more).
    public func waitForClose() throws -> Bool {
        while try fill() {}
        return true
    }

    /// Bytes received but not yet consumed as a response.
    public var unread: [UInt8] { buffer }
}

/// One request, one connection: the common case in endpoint tests. `timeout` bounds each read
/// and write, in seconds.
public func httpRequest(port: UInt16, method: String, path: String, host: String = "localhost",
                        headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double = 10) throws -> RawResponse {
    let client = try RawHTTPClient(port: port, timeout: timeout)
    var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    if !body.isEmpty || method == "POST" { text += "Content-Length: \(body.count)\r\n" }
    text += "\r\n"
    try client.send(Array(text.utf8) + body)
    return try client.readResponse(bodyExpected: method != "HEAD")
}
