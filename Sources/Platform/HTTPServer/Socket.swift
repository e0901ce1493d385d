#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error from a system call, with its name and errno.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// Thin wrappers over the BSD socket calls the server needs. All sockets are non-blocking.
enum Socket {
    /// A listening TCP socket on `host:port` (port 0 picks a free one).
    static func listen(host: String, port: UInt16, backlog: Int32) throws -> (fd: Int32, port: UInt16) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let info = result else {
            throw SystemError(call: "getaddrinfo(\(host))", errno: rc == EAI_SYSTEM ? errno : EINVAL)
        }
        defer { freeaddrinfo(result) }

        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { throw SystemError(call: "socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let e = errno
            close(fd)
            throw SystemError(call: "bind(\(host):\(port))", errno: e)
        }
        guard systemListen(fd, backlog) == 0 else {
            let e = errno
            close(fd)
            throw SystemError(call: "listen", errno: e)
        }
        try setNonBlocking(fd)
        return (fd, try localPort(fd))
    }

    static func localPort(_ fd: Int32) throws -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { throw SystemError(call: "getsockname", errno: errno) }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    static func setNonBlocking(_ fd: Int32) throws {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw SystemError(call: "fcntl(O_NONBLOCK)", errno: errno)
        }
    }

    /// Accepts one pending connection: its descriptor and the peer's address as text.
    static func accept(_ listener: Int32) -> (fd: Int32, address: String)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemAccept(listener, $0, &length) }
        }
        guard fd >= 0 else { return nil }
        _ = try? setNonBlocking(fd)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        return (fd, address(of: &storage))
    }

    static func address(of storage: inout sockaddr_storage) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = Int32(storage.ss_family)
        withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var addr = sin6.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
                }
            } else if family == AF_INET {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
                }
            }
        }
        var text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // An IPv4 peer on a dual-stack socket shows up as ::ffff:a.b.c.d.
        if text.hasPrefix("::ffff:") && text.contains(".") { text.removeFirst(7) }
        return text
    }

    /// Sends without raising SIGPIPE when the peer has gone.
    static func send(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        return Glibc.send(fd, pointer, count, Int32(MSG_NOSIGNAL))
        #else
        return Darwin.send(fd, pointer, count, 0)
        #endif
    }
}

// `listen` and `accept` are shadowed by the static methods above inside `Socket`.
private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 {
    #if canImport(Glibc)
    return Glibc.listen(fd, backlog)
    #else
    return Darwin.listen(fd, backlog)
    #endif
}

private func systemAccept(_ fd: Int32, _ addr: UnsafeMutablePointer<sockaddr>, _ len: UnsafeMutablePointer<socklen_t>) -> Int32 {
    #if canImport(Glibc)
    return Glibc.accept(fd, addr, len)
    #else
    return Darwin.accept(fd, addr, len)
    #endif
}

/// Seconds on a clock that never jumps, for timeouts.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
