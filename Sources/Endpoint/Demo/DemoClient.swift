import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small blocking HTTP/1.1 client for the demo: it talks to the endpoint it started over
/// loopback, through the same sockets and parser a browser's requests meet.
struct DemoClient {
    let port: UInt16

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    func send(_ method: String, _ path: String, host: String, headers: [String: String] = [:], body: String = "") throws -> Response {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect to port \(port): errno \(errno)") }
        var request = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n" + body
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no response head from \(path)") }
        let lines = text[..<split.lowerBound].split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.split(separator: " ").count >= 2,
              let status = Int(statusLine.split(separator: " ")[1]) else { throw Failure(description: "bad status line from \(path)") }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            if let colon = line.firstIndex(of: ":") {
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return Response(status: status, headers: fields, body: String(text[split.upperBound...]))
    }
}
