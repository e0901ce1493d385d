#!/usr/bin/env python3
"""Paired runs of endpoint binaries taking postback copies, for deciding whether a change costs
postbacks/s (issue 30: "ingest unchanged"). Each round starts each binary in turn, with a fresh
data directory and the default configuration, and wrk (core 1, 64 connections) sends distinct
SKAdNetwork 4.0 postbacks signed beforehand with a test key the endpoint trusts. Prints each
run's postbacks/s and, at the end, the median ratio of the later binaries to the first.

    python3 benchmarks/ab_postbacks.py [-r ROUNDS] [-d SECONDS] BINARY [BINARY...]
"""
import argparse
import base64
import os
import statistics
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import postbacks as p  # noqa: E402
import bench  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-r", type=int, default=5, dest="rounds")
    parser.add_argument("-d", type=int, default=6, dest="seconds")
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    key = ec.derive_private_key(0x5EED_0030, ec.SECP256R1())
    spki = base64.b64encode(key.public_key().public_bytes(serialization.Encoding.DER,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
    bodies = p.sign_postbacks(key, 120_000)
    rates = {binary: [] for binary in args.binaries}
    for round_ in range(args.rounds):
        for n, binary in enumerate(args.binaries):
            p.ENDPOINT = bench.ENDPOINT = os.path.abspath(binary)
            process, port = p.endpoint(spki, os.path.join(p.WORK, "r%d-b%d" % (round_, n)), "0,1")
            result = p.parse(p.wrk(port, p.PATH, p.lua_postbacks(bodies), 64, args.seconds).communicate()[0])
            p.stop(process)
            rates[binary].append(result["rps"])
            print("round %d  %-50s %8.0f postbacks/s" % (round_ + 1, binary, result["rps"]), flush=True)
    first = rates[args.binaries[0]]
    for binary in args.binaries[1:]:
        ratios = [b / a for a, b in zip(first, rates[binary])]
        print("%s / %s: median ratio %.3f (%s)" % (binary, args.binaries[0], statistics.median(ratios),
                                                  " ".join("%.3f" % r for r in ratios)))


if __name__ == "__main__":
    main()
