#!/usr/bin/env python3
"""A second implementation of HANDOVER.md's encodings (section 4), written
from the document alone, that checks every row of handover.json:

    python3 router/testdata/check_handover.py

It encodes each marker and moved message and compares the properties,
decodes them back, rejects each invalid row naming the property the row
names, and compares positions. Plain Python 3, no dependencies."""

import json
import os
import sys
import unicodedata

PREFIX = "keyroute-"
MARKER, PID, EPOCH, MOVED, FROM, UNORDERED = (
    PREFIX + n for n in ("marker", "pid", "epoch", "moved", "from", "unordered"))
U64 = 2**64 - 1


class Bad(Exception):
    """A property that does not follow the encoding; args[0] names it."""


def decimal(s, name, lo=0, hi=U64, minus_one=False):
    if minus_one and s == "-1":
        return -1
    if not s or not s.isascii() or not s.isdigit() or (len(s) > 1 and s[0] == "0"):
        raise Bad(name)
    v = int(s)
    if v < lo or v > hi:
        raise Bad(name)
    return v


def pid(props):
    v = props.get(PID)
    if v is None or len(v) != 16 or any(c not in "0123456789abcdef" for c in v):
        raise Bad(PID)
    return int(v, 16)


def epoch(props):
    if EPOCH not in props:
        raise Bad(EPOCH)
    return decimal(props[EPOCH], EPOCH, lo=1)


def name_ok(n):
    # Cluster names: UTF-8 without whitespace, control or other
    # non-printing characters.
    return n != "" and all(not c.isspace() and unicodedata.category(c)[0] not in "CZ" for c in n)


def origin(entry):
    f = entry.split(":", 4)
    if len(f) != 5 or not name_ok(f[4]):
        raise Bad(FROM)
    return {"partition": decimal(f[0], FROM, hi=2**31 - 1), "ledger": decimal(f[1], FROM, hi=2**63 - 1),
            "entry": decimal(f[2], FROM, hi=2**63 - 1), "batch": decimal(f[3], FROM, hi=2**31 - 1, minus_one=True),
            "cluster": f[4]}


def parse_marker(props):
    if props[MARKER] != "1":
        raise Bad(MARKER)
    for k in sorted(props):
        if k not in (MARKER, PID, EPOCH, MOVED):
            raise Bad(k)
    m = {"producer": pid(props), "epoch": epoch(props)}
    if MOVED not in props:
        raise Bad(MOVED)
    m["moved"] = decimal(props[MOVED], MOVED)
    return m


def parse_tag(props):
    if PID not in props:
        reserved = sorted(k for k in props if k.startswith(PREFIX))
        if reserved:
            raise Bad(reserved[0])
        return None
    for k in (MARKER, MOVED):
        if k in props:
            raise Bad(k)
    t = {"producer": pid(props), "epoch": epoch(props), "from": [], "unordered": False}
    if UNORDERED in props:
        if props[UNORDERED] != "1":
            raise Bad(UNORDERED)
        t["unordered"] = True
    if FROM in props:
        t["from"] = [origin(e) for e in props[FROM].split(" ")]
    for k in props:
        if k.startswith(PREFIX) and k not in (PID, EPOCH, FROM, UNORDERED):
            raise Bad(k)
    return t


def encode_marker(producer, ep, moved):
    return {MARKER: "1", PID: "%016x" % producer, EPOCH: str(ep), MOVED: str(moved)}


def encode_tag(producer, ep, origins, unordered):
    p = {PID: "%016x" % producer, EPOCH: str(ep)}
    if origins:
        p[FROM] = " ".join("%d:%d:%d:%d:%s" % (o["partition"], o["ledger"], o["entry"], o["batch"], o["cluster"])
                           for o in origins)
    if unordered:
        p[UNORDERED] = "1"
    return p


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "handover.json"), encoding="utf-8") as f:
        data = json.load(f)
    bad = 0

    def check(ok, what):
        nonlocal bad
        if not ok:
            bad += 1
            print("MISMATCH:", what)

    for r in data["markers"]:
        check(encode_marker(int(r["producer"], 16), r["epoch"], r["moved"]) == r["properties"], r["name"])
        check(parse_marker(r["properties"]) == {"producer": int(r["producer"], 16), "epoch": r["epoch"], "moved": r["moved"]},
              r["name"] + " decoded")
    for r in data["tags"]:
        check(encode_tag(int(r["producer"], 16), r["epoch"], r["from"], r["unordered"]) == r["properties"], r["name"])
        want = {"producer": int(r["producer"], 16), "epoch": r["epoch"], "from": r["from"], "unordered": r["unordered"]}
        check(parse_tag(r["properties"]) == want, r["name"] + " decoded")
    for r in data["not_handover"]:
        check(MARKER not in r["properties"] and parse_tag(r["properties"]) is None, r["name"])
    for r in data["invalid"]:
        try:
            (parse_marker if MARKER in r["properties"] else parse_tag)(r["properties"])
            check(False, r["name"] + " accepted")
        except Bad as e:
            check(e.args[0] == r["property"], "%s names %s, not %s" % (r["name"], e.args[0], r["property"]))
    for r in data["positions"]:
        # A batch index of -1 (not in a batch, Java) compares as 0.
        a = (r["a"][0], r["a"][1], max(r["a"][2], 0))
        b = (r["b"][0], r["b"][1], max(r["b"][2], 0))
        check((a > b) - (a < b) == r["compare"], "positions %s %s" % (a, b))
    rows = sum(len(data[k]) for k in ("markers", "tags", "not_handover", "invalid", "positions"))
    print("%d rows, %d mismatches" % (rows, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
