import Foundation
import Locking
import Testing
@testable import Endpoint

/// Every call of an Apple Ads answer, a signature checked on a worker and more asks the event
/// loop for a turn: the ten-thousandth request must cost what the first did.
@Suite struct TurnRequesterTests {
    @Test func theTenThousandthRequestIsAsDeepAsTheFirst() {
        let turns = TurnRequester()
        let depths = Locked<[Int]>([])
        turns.connect { depths.withLock { $0.append(Thread.callStackReturnAddresses.count) } }
        for _ in 0..<10_000 { turns.request() }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 10_000)
        // A closure held bare in `Locked` came back wrapped in two more thunks each time: the
        // last request ran 20,000 frames deeper than the first.
        #expect(seen.last == seen.first, "first \(seen.first ?? 0) frames, last \(seen.last ?? 0)")
    }
}
