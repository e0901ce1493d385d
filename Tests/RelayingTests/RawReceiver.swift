import Dispatch
import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// A receiver that misbehaves at the socket level, which an HTTP server cannot be made to do:
/// plain POSIX sockets on loopback, on a thread of its own, one connection at a time. One
/// behaviour for the first `times` connections, then a plain 200 after reading the whole request.
/// Keeps each body it read whole.
final class RawReceiver: Sendable {
    enum Behaviour {
        /// Answers 200 as soon as the headers are in, and closes, the body unread.
        case answerBeforeBody
        /// Reads the headers, then resets the connection (SO_LINGER 0).
        case resetMidBody
    }

    private let listener: Int32
    let port: Int
    let bodies = Locked<[[UInt8]]>([])
    private let stopping = Locked(false)
    private let done = DispatchGroup()

    init(_ behaviour: Behaviour, times: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 16) == 0 else { throw CocoaError(.fileWriteUnknown) }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let (listener, bodies, stopping) = (self.listener, self.bodies, self.stopping)
        done.startThread(named: "raw-receiver") {
            var served = 0
            while !stopping.withLock({ $0 }) {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                served += 1
                Self.serve(connection, behaviour: served <= times ? behaviour : nil, bodies: bodies)
            }
        }
    }

    var url: String { "http://127.0.0.1:\(port)/copies" }

    /// Stops accepting (the listener is shut down, which ends the waiting `accept`).
    func stop() -> [[UInt8]] {
        stopping.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
        done.wait()
        // Only now: closed before, the descriptor could be another socket's by the next `accept`.
        close(listener)
        return bodies.withLock { $0 }
    }

    private static func serve(_ connection: Int32, behaviour: Behaviour?, bodies: Locked<[[UInt8]]>) {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        func headEnd() -> Int? {
            guard data.count >= 4 else { return nil }
            return (0...(data.count - 4)).first { Array(data[$0..<($0 + 4)]) == separator }
        }
        while headEnd() == nil {
            let n = recv(connection, &buffer, buffer.count, 0)
            guard n > 0 else { close(connection); return }
            data += buffer[0..<n]
        }
        let end = headEnd()! + 4
        let head = String(decoding: data[..<end], as: UTF8.self).lowercased()
        let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let ok = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        switch behaviour {
        case .answerBeforeBody:
            _ = send(connection, ok, ok.count, Int32(MSG_NOSIGNAL))
            close(connection)
            return
        case .resetMidBody:
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(connection)
            return
        case nil:
            var body = Array(data[end...])
            while body.count < length {
                let n = recv(connection, &buffer, buffer.count, 0)
                guard n > 0 else { break }
                body += buffer[0..<n]
            }
            bodies.withLock { $0.append(body) }
            _ = send(connection, ok, ok.count, Int32(MSG_NOSIGNAL))
            close(connection)
        }
    }
}
