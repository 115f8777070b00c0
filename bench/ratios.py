#!/usr/bin/env python3
"""Ratios of lockweave's rows against the peers', from one harness run.

Usage: ratios.py PEERS.jsonl  (writes chart.dat beside it for chart.gp)
Targets are issue 5's; a ratio is measured, never asserted.
"""
import json
import os
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]


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
