import Dispatch
import Foundation
import Testing
@testable import HTTPServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct LineWriterTests {
    /// A pipe nobody reads fills up; the writer's callers go on, the lines that do not fit are
    /// counted, and once the reader comes back every line is either delivered or counted as
    /// dropped, and one line says how many were dropped.
    @Test(.timeLimit(.minutes(1))) func aStalledReaderCostsLinesAndOneLineSaysSo() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writer = LineWriter(fd: fds[1], capacity: 4096, batchDelay: .milliseconds(1))
        let line = Array((String(repeating: "x", count: 99) + "\n").utf8)
        let sent = 2_000  // 200 KB: more than the pipe (64 KB) and the buffer (4 KB) hold
        for _ in 0..<sent { writer.enqueue(line, lines: 1) }  // returns although nothing is read
        #expect(writer.droppedLines > 0)

        // The reader comes back.
        let received = ReadAll(fd: fds[0])
        #expect(writer.close(waitingAtMost: 10))
        close(fds[1])
        let text = received.wait()
        let lines = text.split(separator: "\n")
        let delivered = lines.filter { $0.hasPrefix("xxx") }.count
        let notices = lines.filter { $0.contains("\"event\":\"log_lines_dropped\"") }
        #expect(delivered + writer.droppedLines == sent, "every line delivered or counted")
        let said = notices.compactMap { n in n.split(separator: ":").last.flatMap { Int($0.dropLast()) } }.reduce(0, +)
        #expect(!notices.isEmpty && said == writer.droppedLines, "\(notices)")
        #expect(lines.allSatisfy { $0.hasPrefix("xxx") && $0.count == 99 || $0.hasPrefix("{") }, "no line was torn")
        close(fds[0])
    }

    @Test func linesGetOutPromptlyAndInOrder() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writer = LineWriter(fd: fds[1])
        let received = ReadAll(fd: fds[0])
        for i in 0..<1_000 { writer.writeLine("line \(i)") }
        #expect(writer.close(waitingAtMost: 10))
        close(fds[1])
        let lines = received.wait().split(separator: "\n").map(String.init)
        #expect(lines == (0..<1_000).map { "line \($0)" })
        #expect(writer.droppedLines == 0)
        writer.writeLine("after close")
        #expect(writer.droppedLines == 1, "a closed writer takes nothing")
        close(fds[0])
    }
}

/// Reads a descriptor to its end on a thread of its own.
private final class ReadAll: @unchecked Sendable {
    private var data: [UInt8] = []
    private let done = DispatchSemaphore(value: 0)

    init(fd: Int32) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                data.append(contentsOf: buffer[0..<n])
            }
            done.signal()
        }
    }

    func wait() -> String {
        done.wait()
        return String(decoding: data, as: UTF8.self)
    }
}
