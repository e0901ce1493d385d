import Dispatch
import Foundation
import Locking
import Testing

/// Operators find the endpoint's threads in `top -H`, `perf` and /proc by the names we give them.
@Suite struct ThreadNameTests {
    @Test(.enabled(if: runsOnLinux, "thread names are read from /proc, which only Linux has"))
    func aStartedThreadCarriesItsNameForTheKernelCutAt15Bytes() throws {
        #if os(Linux)
        let seen = Locked<[String]>([])
        let group = DispatchGroup()
        for name in ["log-writer", "signature-check-0"] {
            group.startThread(named: name) {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                seen.withLock { $0.append(comm.trimmingCharacters(in: .newlines)) }
            }
        }
        group.wait()
        #expect(seen.withLock { $0.sorted() } == ["log-writer", "signature-check"])
        #endif
    }
}

/// Whether these tests run where `/proc` tells what the kernel made of a thread.
#if os(Linux)
let runsOnLinux = true
#else
let runsOnLinux = false
#endif
