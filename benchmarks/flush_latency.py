#!/usr/bin/env python3
"""How long one flush takes on this disk, outside the endpoint: 3,000 times `pwrite` of 5,000 bytes
(a batch of about 25 reports) and `fdatasync`, on core 0, in a file under the data directory's disk.

Two ways of writing: "grow" appends at the end of the file, as a log without preallocation does;
"overwrite" writes over zeros written and flushed beforehand, as a preallocated log does.
With --competitor, a busy loop shares core 0 at the same priority, as the event loop shares it with
a writer thread: the flush then also waits for the core.

Usage: python3 benchmarks/flush_latency.py [--dir DIR] [--competitor]
"""
import argparse
import multiprocessing
import os
import statistics
import time

N = 3000
SIZE = 5000


def spin():
    os.sched_setaffinity(0, {0})
    while True:
        pass


def measure(path, mode):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if mode == "overwrite":
            os.write(fd, b"\0" * (SIZE * N + 4096))
            os.fsync(fd)
        buf = b"x" * SIZE
        times = []
        for i in range(N):
            started = time.perf_counter()
            os.pwrite(fd, buf, i * SIZE)
            os.fdatasync(fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        os.unlink(path)
    times.sort()
    return times[N // 2] * 1e6, statistics.mean(times) * 1e6, times[int(N * 0.99)] * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default=".")
    parser.add_argument("--competitor", action="store_true")
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    competitor = None
    if args.competitor:
        competitor = multiprocessing.Process(target=spin, daemon=True)
        competitor.start()
        time.sleep(0.2)
    try:
        for mode in ("grow", "overwrite"):
            p50, mean, p99 = measure(os.path.join(args.dir, ".flush-latency-test"), mode)
            print("%-9s %s p50 %4.0f µs  mean %4.0f µs  p99 %5.0f µs" % (
                mode, "(core shared)" if competitor else "(core alone) ", p50, mean, p99))
    finally:
        if competitor:
            competitor.terminate()


if __name__ == "__main__":
    main()
