import Dispatch
import Foundation
import HTTPServer
import Locking
import Testing

/// The pool every slow job goes to: its queue is bounded, what it took runs, and a stop lets what
/// was submitted finish.
@Suite struct WorkerPoolTests {
    @Test func pastItsBoundASubmissionIsRefusedAndNeverRuns() {
        let pool = WorkerPool(named: "test-pool", threads: 1, priority: .normal, maxWaiting: 3)
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let ran = Locked<[Int]>([])
        // The one thread is held, so that the next jobs wait in the queue.
        #expect(pool.submit { started.signal(); gate.wait() })
        started.wait()
        let taken = (1...5).map { n in pool.submit { ran.withLock { $0.append(n) } } }
        #expect(taken == [true, true, true, false, false])
        gate.signal()
        pool.stop()
        // What was taken ran, in order; what was refused did not.
        #expect(ran.withLock { $0 } == [1, 2, 3])
        // Stopped: nothing more is taken.
        #expect(!pool.submit {})
    }

    @Test func itsThreadsCarryItsName() {
        let pool = WorkerPool(named: "named-pool", threads: 2, priority: .background)
        let names = Locked<Set<String>>([])
        let done = DispatchGroup()
        for _ in 0..<20 {
            done.enter()
            pool.submit {
                // The kernel's name of the calling thread, as `top -H` shows it.
                let name = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
                names.withLock { _ = $0.insert(name) }
                done.leave()
            }
        }
        done.wait()
        pool.stop()
        #expect(names.withLock { $0 }.isSubset(of: ["named-pool-0", "named-pool-1"]))
        #expect(!names.withLock { $0 }.isEmpty)
    }
}
