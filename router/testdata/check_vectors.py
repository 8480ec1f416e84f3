#!/usr/bin/env python3
"""Second, independent implementation of router/SPEC.md, in plain Python.

It checks every row of vectors.json without using the Go code or any xxHash
library, so the vectors (and SPEC.md) are shown to be reproducible from the
written spec alone. Run: python3 router/testdata/check_vectors.py
"""

import json
import math
import os
import sys

MASK = (1 << 64) - 1

# xxHash64 primes, from the xxHash specification.
X1 = 0x9E3779B185EBCA87
X2 = 0xC2B2AE3D27D4EB4F
X3 = 0x165667B19E3779F9
X4 = 0x85EBCA77C2B2AE63
X5 = 0x27D4EB2F165667C5

# SPEC.md constants.
S = 0xE7037ED1A0B428DB
SLOT_BITS = 16
G = 0x9E3779B97F4A7C15
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB
J = 0x27BB2EE687B0B0FD  # jump hash LCG multiplier (2862933555777941757)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK


def xxh64_round(acc, lane):
    acc = (acc + lane * X2) & MASK
    return (rotl(acc, 31) * X1) & MASK


def xxh64(data, seed=0):
    n = len(data)
    i = 0
    if n >= 32:
        v = [(seed + X1 + X2) & MASK, (seed + X2) & MASK, seed, (seed - X1) & MASK]
        while i + 32 <= n:
            for j in range(4):
                lane = int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little")
                v[j] = xxh64_round(v[j], lane)
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & MASK
        for lane in v:
            h = ((h ^ xxh64_round(0, lane)) * X1 + X4) & MASK
    else:
        h = (seed + X5) & MASK
    h = (h + n) & MASK
    while i + 8 <= n:
        h ^= xxh64_round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (rotl(h, 27) * X1 + X4) & MASK
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * X1) & MASK
        h = (rotl(h, 23) * X2 + X3) & MASK
        i += 4
    while i < n:
        h ^= (data[i] * X5) & MASK
        h = (rotl(h, 11) * X1) & MASK
        i += 1
    h ^= h >> 33
    h = (h * X2) & MASK
    h ^= h >> 29
    h = (h * X3) & MASK
    h ^= h >> 32
    return h


def mix64(z):
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def keyless(seq):
    return mix64(((seq + 1) * G) & MASK)


def score(h, seed):
    z = (h + seed) & MASK
    prod = (z ^ S) * z
    return (prod >> 64) ^ (prod & MASK)


def owner(members, h):
    equal = all(w == members[0][1] for _, w in members)
    v = keyless(h >> (64 - SLOT_BITS))  # the slot's value
    best = None
    for name, w in members:
        x = score(v, xxh64(name.encode("utf-8")))
        if equal:
            key = x
        else:
            u = float((x >> 11) | 1) * 2.0 ** -53
            key = -(w / math.log(u))
        name_bytes = name.encode("utf-8")
        if best is None or key > best[0] or (key == best[0] and name_bytes < best[1]):
            best = (key, name_bytes, name)
    return best[2]


def partition(h, n):
    """Step 3: jump consistent hash of the 48 low bits, in integers."""
    k = h & ((1 << (64 - SLOT_BITS)) - 1)
    b, j = -1, 0
    while j < n:
        b = j
        k = (k * J + 1) & MASK
        j = ((b + 1) << 31) // ((k >> 33) + 1)
    return b


def check_growth():
    """Growing P to Q partitions leaves a key where it was or puts it on a
    new partition (>= P), as SPEC.md step 3 says."""
    moved = 0
    for seq in range(20000):
        h = keyless(seq)
        p, q = partition(h, 5), partition(h, 8)
        assert q == p or q >= 5, (seq, p, q)
        moved += q != p
    assert abs(moved / 20000 - 3 / 8) < 0.02, moved


def main():
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    assert keyless(0) == 0xE220A8397B1DCDAF
    check_growth()

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    sets = {s["name"]: [(m["name"], float(m["weight"])) for m in s["members"]] for s in doc["sets"]}
    bad = 0
    rows = 0
    for row in doc["keyed"]:
        key = bytes.fromhex(row["key_utf8_hex"])
        assert key == row["key"].encode("utf-8"), row
        h = xxh64(key)
        got = ("%016x" % h, owner(sets[row["set"]], h), partition(h, row["partitions"]))
        want = (row["hash"], row["cluster"], row["partition"])
        rows += 1
        if got != want:
            bad += 1
            print("MISMATCH keyed", row, "got", got)
    for row in doc["keyless"]:
        h = keyless(row["seq"])
        got = ("%016x" % h, owner(sets[row["set"]], h), partition(h, row["partitions"]))
        want = (row["hash"], row["cluster"], row["partition"])
        rows += 1
        if got != want:
            bad += 1
            print("MISMATCH keyless", row, "got", got)
    print("%d passed, %d failed" % (rows - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
