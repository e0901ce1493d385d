#if canImport(Glibc)
import Glibc
import CSystemShims
#elseif canImport(Darwin)
import Darwin
#endif

/// Readiness of one descriptor, as reported by the poller.
struct PollEvent {
    var fd: Int32
    var readable: Bool
    var writable: Bool
    /// Hang-up or error: the peer is gone or the socket is broken.
    var failed: Bool
}

#if os(Linux)
/// Level-triggered epoll. One instance per event loop, used from its thread only.
struct Poller {
    private let epfd: Int32
    private var events = [epoll_event](repeating: epoll_event(), count: 1024)

    init() throws {
        epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epfd >= 0 else { throw SystemError(call: "epoll_create1", errno: errno) }
    }

    func add(_ fd: Int32, readable: Bool, writable: Bool) {
        control(EPOLL_CTL_ADD, fd, readable: readable, writable: writable)
    }

    func modify(_ fd: Int32, readable: Bool, writable: Bool) {
        control(EPOLL_CTL_MOD, fd, readable: readable, writable: writable)
    }

    func remove(_ fd: Int32) {
        var event = epoll_event()
        epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &event)
    }

    private func control(_ op: Int32, _ fd: Int32, readable: Bool, writable: Bool) {
        var event = epoll_event()
        var mask: UInt32 = 0
        if readable { mask |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if writable { mask |= EPOLLOUT.rawValue }
        event.events = mask
        event.data.fd = fd
        epoll_ctl(epfd, op, fd, &event)
    }

    /// Waits up to `timeoutMilliseconds` and returns what became ready.
    mutating func wait(timeoutMilliseconds: Int32) -> [PollEvent] {
        let count = events.withUnsafeMutableBufferPointer {
            epoll_wait(epfd, $0.baseAddress, Int32($0.count), timeoutMilliseconds)
        }
        guard count > 0 else { return [] }
        var ready: [PollEvent] = []
        ready.reserveCapacity(Int(count))
        for i in 0..<Int(count) {
            let e = events[i].events
            ready.append(PollEvent(
                fd: events[i].data.fd,
                readable: e & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0,
                writable: e & EPOLLOUT.rawValue != 0,
                failed: e & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0))
        }
        return ready
    }

    func close() { _ = Glibc.close(epfd) }
}
#else
/// poll(2) for systems without epoll (macOS). Fine for development; production runs on Linux.
struct Poller {
    private var interest: [Int32: Int16] = [:]

    init() throws {}

    mutating func add(_ fd: Int32, readable: Bool, writable: Bool) { modify(fd, readable: readable, writable: writable) }

    mutating func modify(_ fd: Int32, readable: Bool, writable: Bool) {
        interest[fd] = (readable ? Int16(POLLIN) : 0) | (writable ? Int16(POLLOUT) : 0)
    }

    mutating func remove(_ fd: Int32) { interest[fd] = nil }

    mutating func wait(timeoutMilliseconds: Int32) -> [PollEvent] {
        var fds = interest.map { pollfd(fd: $0.key, events: $0.value, revents: 0) }
        let count = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        guard count > 0 else { return [] }
        return fds.filter { $0.revents != 0 }.map {
            PollEvent(fd: $0.fd, readable: $0.revents & Int16(POLLIN) != 0, writable: $0.revents & Int16(POLLOUT) != 0,
                      failed: $0.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0)
        }
    }

    func close() {}
}
#endif
