#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A stand-in for Apple's attribution API on 127.0.0.1, for tests and the demo: each token gets
/// the answers scripted for it, in order (the last one repeats), and every call is recorded.
/// Besides statuses, it can answer slowly, hold a call open, or drop the connection unanswered.
/// Plain blocking sockets, a thread per call: it serves a handful of calls, not traffic.
public final class AppleAdsStandIn: @unchecked Sendable {
    public enum Step: Sendable, Equatable {
        /// Answers `status` with `body` after `delay` seconds.
        case answer(Int, String, delay: Double = 0)
        /// Closes the connection without answering.
        case drop
        /// Never answers (until the stand-in stops): the caller's time-out decides.
        case hold
    }

    public let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    /// Broadcast whenever a call comes: what `waitForCalls` waits on.
    private let callCame = NSCondition()
    private var scripts: [String: [Step]]
    private var otherwise: Step
    private var calls: [String] = []
    private var stopped = false
    private let held = DispatchSemaphore(value: 0)
    private var holding = 0

    /// `otherwise` answers tokens without a script.
    public init(scripts: [String: [Step]] = [:], otherwise: Step = .answer(404, "")) throws {
        self.scripts = scripts
        self.otherwise = otherwise
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw StandInError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw StandInError("bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "apple-ads-stand-in"
        thread.start()
    }

    /// The URL to pass as `--apple-ads-api`.
    public var url: String { "http://127.0.0.1:\(port)/api/v1/" }

    public func script(_ token: String, _ steps: [Step]) {
        lock.lock(); defer { lock.unlock() }
        scripts[token] = steps
    }

    /// From now on, answers tokens without a script with `step`; calls being held are let go
    /// (their connections close unanswered).
    public func answerUnscripted(_ step: Step) {
        lock.lock()
        otherwise = step
        let waiting = holding
        holding = 0
        lock.unlock()
        for _ in 0..<waiting { held.signal() }
    }

    /// Every call's token, in the order the calls came.
    public var callLog: [String] {
        lock.lock(); defer { lock.unlock() }
        return calls
    }

    public func calls(for token: String) -> Int { callLog.filter { $0 == token }.count }

    /// Waits until at least `count` calls have come, or `seconds` pass; returns whether they came.
    /// Woken by each call, not by a timer.
    public func waitForCalls(atLeast count: Int, within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        callCame.lock()
        defer { callCame.unlock() }
        while callLog.count < count {
            guard callCame.wait(until: deadline) else { return callLog.count >= count }
        }
        return true
    }

    public func stop() {
        lock.lock()
        stopped = true
        let waiting = holding
        holding = 0
        lock.unlock()
        // Closed by the accept loop as it leaves, never here: a descriptor closed under it could
        // be another socket's by its next `accept`.
        shutdown(listener, Int32(SHUT_RDWR))
        for _ in 0..<waiting { held.signal() }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                lock.lock(); let done = stopped; lock.unlock()
                if done {
                    close(listener)
                    return
                }
                continue
            }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        guard let token = readBody(connection) else { return }
        lock.lock()
        let index = calls.filter { $0 == token }.count
        calls.append(token)
        let steps = scripts[token] ?? [otherwise]
        let step = steps.isEmpty ? otherwise : steps[min(index, steps.count - 1)]
        if step == .hold { holding += 1 }
        lock.unlock()
        // Under the condition's lock: a waiter holds it from its count to its wait, so this
        // broadcast cannot fall between them.
        callCame.lock()
        callCame.broadcast()
        callCame.unlock()
        switch step {
        case .drop: return
        case .hold: held.wait()
        case .answer(let status, let body, let delay):
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }  // Apple holding its answer
            let head = "HTTP/1.1 \(status) Stand-in\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            let bytes = Array((head + body).utf8)
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        }
    }

    /// The request's body (the token), read by its Content-Length.
    private func readBody(_ connection: Int32) -> String? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        var headerEnd: Int?
        var length = 0
        while true {
            if let end = headerEnd, data.count >= end + length {
                return String(decoding: data[end..<end + length], as: UTF8.self)
            }
            let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            data += buffer[0..<n]
            if headerEnd == nil, let range = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                headerEnd = range.upperBound
                let head = String(decoding: data[..<range.lowerBound], as: UTF8.self).lowercased()
                for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
                    length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
    }
}

struct StandInError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
