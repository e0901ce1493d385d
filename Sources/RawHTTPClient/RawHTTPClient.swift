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

/// A blocking TCP client that writes raw bytes and reads responses, for live-server tests.
/// Every read has a deadline, so a server that hangs fails the test instead of hanging it.
public final class RawHTTPClient {
    public private(set) var fd: Int32
    private var buffer: [UInt8] = []

    public init(port: UInt16, host: String = "127.0.0.1", timeout: Double = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            // Closed here and marked, because deinit still runs when an initializer throws
            // after every property is set: closing twice would close whatever fd reused the
            // number, in a process where other tests' servers run.
            Glibc.close(fd)
            fd = -1
            throw RawHTTPError("connect failed: errno \(e)")
        }
        setTimeout(timeout)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    public func setTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: .init((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawHTTPError("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Half-closes: the server sees end of input but can still answer.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes; false at end of stream. Throws on timeout.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n > 0 {
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
        if n == 0 { return false }
        if errno == EAGAIN || errno == EWOULDBLOCK { throw RawHTTPError("timed out waiting for the server") }
        if errno == ECONNRESET { return false }
        throw RawHTTPError("recv failed: errno \(errno)")
    }

    /// Reads one response. `bodyExpected: false` for answers to HEAD.
    public func readResponse(bodyExpected: Bool = true) throws -> RawResponse {
        var headEnd: Int?
        while true {
            if let end = findHeadEnd() { headEnd = end; break }
            guard try fill() else { throw RawHTTPError("connection closed before a complete response head") }
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + 4)
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw RawHTTPError("bad status line \(lines[0])") }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = RawResponse(status: status, headers: headers, body: [])
        if !bodyExpected || status == 204 || status == 304 || (100..<200).contains(status) { return response }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            while buffer.count < length { guard try fill() else { throw RawHTTPError("closed mid-body") } }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            response.body = try readChunked()
        } else {
            while try fill() {}
            response.body = buffer
            buffer.removeAll()
        }
        return response
    }

    private func readChunked() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine()
            guard let size = Int(line.split(separator: ";")[0], radix: 16) else { throw RawHTTPError("bad chunk size \(line)") }
            if size == 0 {
                while try !readLine().isEmpty {}
                return body
            }
            while buffer.count < size + 2 { guard try fill() else { throw RawHTTPError("closed mid-chunk") } }
            body.append(contentsOf: buffer[0..<size])
            buffer.removeFirst(size + 2)
        }
    }

    private func readLine() throws -> String {
        while true {
            if let i = buffer.firstIndex(of: 0x0A), i > 0, buffer[i - 1] == 0x0D {
                let line = String(decoding: buffer[0..<(i - 1)], as: UTF8.self)
                buffer.removeFirst(i + 1)
                return line
            }
            guard try fill() else { throw RawHTTPError("closed mid-line") }
        }
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
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
