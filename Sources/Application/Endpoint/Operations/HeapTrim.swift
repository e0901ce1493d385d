import CSystemShims

/// Every ten seconds, hands the kernel back the free pages inside malloc's heaps. A burst (a day
/// of Apple Ads tokens waiting, a flood of postbacks checked on worker threads) leaves per-thread
/// heaps mostly free but resident: in the month benchmark two of them held 40 MB of free memory
/// after each day's tokens were answered. A trim walks the free lists, a millisecond or less.
final class HeapTrim: PeriodicallySwept {
    let thread = PeriodicSweep(named: "heap-trim", priority: .background, interval: 10)

    func sweep() {
        c_system_shims_trim_heap()
    }
}
