#!/usr/bin/env python3
"""Ratios of lockweave's rows against the peers', from one harness run.

Usage: ratios.py PEERS.jsonl [--paired PAIRED.jsonl]
  (writes chart.dat beside PEERS.jsonl for chart.gp)
With --paired, also each ratio per round of bench/paired.sh (the two sides
run back to back) and their median and range; rows marked (reference) and
(ceiling) set two other implementations side by side: the hand-written lock
against the bound, and the serial bound (bench/bound.c) against the
hand-written lock, the most any lock could reach against it.
Targets are the project's (docs/benchmarks.md); a ratio is measured, never
asserted.
"""
import json
import os
import statistics
import sys


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


rows = load(sys.argv[1])


def pick(impl, workload, retry=None):
    """Best row for impl/workload (at retry if given)."""
    c = [r for r in rows if r["impl"] == impl and r["workload"] == workload
         and (retry is None or r["retry_ms"] == retry)]
    return max(c, key=lambda r: r["ops_per_s"]) if c else None


def ratio(a, b, key="ops_per_s"):
    return a[key] / b[key] if a and b and b[key] else float("nan")


lw = {w: pick("lockweave", w) for w in ("uncontended", "contended", "spread")}
bound = pick("raw-2rtt", "uncontended")
hand = {w: pick("hiredis-handwritten", w, None if w == "uncontended" else 1)
        for w in ("uncontended", "contended", "spread")}
libs = ["redis-py-lock", "node-redlock", "redis-semaphore"]

lines = [
    ("uncontended / 2-round-trip bound", ratio(lw["uncontended"], bound), ">= 0.90"),
    ("contended / hand-written (1 ms retry)", ratio(lw["contended"], hand["contended"]), ">= 1.00"),
    ("contended p99 / hand-written p99", ratio(lw["contended"], hand["contended"], "p99_us"), "<= 0.50"),
    ("spread / hand-written (1 ms retry)", ratio(lw["spread"], hand["spread"]), ">= 1.00"),
]
for w in ("uncontended", "contended", "spread"):
    best = max((pick(l, w) for l in libs if pick(l, w)), key=lambda r: r["ops_per_s"], default=None)
    if best:
        lines.append((f"{w} / best library peer ({best['impl']})", ratio(lw[w], best), "-"))
print()
print(f"{'lockweave ratio':48} {'measured':>9}  target")
for name, v, target in lines:
    print(f"{name:48} {v:9.2f}  {target}")
viol = sum(r["violations"] for r in rows if r["impl"] == "lockweave")
print(f"{'lockweave violations (all workloads)':48} {viol:9d}  0")

# chart.dat: one row per implementation, best ops/s per workload.
impls = ["raw-2rtt", "lockweave", "hiredis-handwritten"] + libs
with open(os.path.join(os.path.dirname(sys.argv[1]), "chart.dat"), "w") as f:
    f.write("impl uncontended contended spread\n")
    for i in impls:
        vals = [pick(i, w) for w in ("uncontended", "contended", "spread")]
        if any(vals):
            f.write(i + " " + " ".join(f"{v['ops_per_s']:.0f}" if v else "0" for v in vals) + "\n")

if len(sys.argv) == 4 and sys.argv[2] == "--paired":
    paired = load(sys.argv[3])
    by = {}
    for r in paired:
        by[(r["round"], r["impl"], r["workload"])] = r
    rounds = sorted({r["round"] for r in paired})
    specs = [
        ("uncontended / 2-round-trip bound", "uncontended", "raw-2rtt", "ops_per_s", ">= 0.90"),
        ("contended / hand-written (1 ms retry)", "contended", "hiredis-handwritten", "ops_per_s", ">= 1.00"),
        ("contended p99 / hand-written p99", "contended", "hiredis-handwritten", "p99_us", "<= 0.50"),
        ("spread / hand-written (1 ms retry)", "spread", "hiredis-handwritten", "ops_per_s", ">= 1.00"),
        ("uncontended / hand-written", "uncontended", "hiredis-handwritten", "ops_per_s", "-"),
        ("(reference) hand-written / 2-round-trip bound", "uncontended", "raw-2rtt", "ops_per_s", "-", "hiredis-handwritten"),
        ("contended / serial bound", "contended", "serial-bound", "ops_per_s", "-"),
        ("(ceiling) serial bound / hand-written", "contended", "hiredis-handwritten", "ops_per_s", "-", "serial-bound"),
    ]
    print()
    print(f"paired rounds ({len(rounds)}, each ratio from one round's back-to-back runs)")
    print(f"{'ratio':46} {'median':>7} {'min':>6} {'max':>6}  per round          target")
    for name, w, other, key, target, *num in specs:
        vals = []
        for rd in rounds:
            a, b = by.get((rd, (num or ["lockweave"])[0], w)), by.get((rd, other, w))
            if a and b and b[key]:
                vals.append(a[key] / b[key])
        if vals:
            each = " ".join(f"{v:.2f}" for v in vals)
            print(f"{name:46} {statistics.median(vals):7.2f} {min(vals):6.2f} {max(vals):6.2f}  {each:18} {target}")
    viol = sum(r["violations"] for r in paired)
    print(f"{'violations (all paired runs)':46} {viol:7d}")
