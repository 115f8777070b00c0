#!/usr/bin/env python3
"""Per-round ratios of lockweave against every other implementation, from
paired rounds (bench/threads/run.sh, bench/lan/run.sh).

Usage: paired_ratios.py PAIRED.jsonl [--each-retry] [--target WORKLOAD=TEXT]...

PAIRED.jsonl holds the drivers' JSON lines, each with a "round" added; in one
round every implementation ran each workload back to back.  For each workload
and each other implementation, the ratio lockweave / it of sections per
second and of p99 is taken round by round, and the median and range printed.
An implementation run at several --retry-ms in a round counts with its best
run of that round (most sections per second; its p99 is that run's), and the
retry that won each round is listed; --each-retry gives every retry its own
row instead.  --target only labels a workload's rows: a ratio is measured,
never asserted.

When the serial bound ran too (bench/bound.c: the workload's sections back
to back with no lock), lockweave / serial-bound is the share of that ceiling
lockweave reaches, and a second table gives serial-bound / each other
implementation: the most any lock could reach against it on this machine.
The same for no-lock (bench/loop/lw_loop_driver.c --no-lock: the sections
with no lock and many in flight, the ceiling where sections may overlap, as
on many keys); its violations are expected and counted apart.

--target WORKLOAD=TEXT labels all of a workload's rows, --target
WORKLOAD/OTHER=TEXT only its row against OTHER (which wins).
"""
import json
import statistics
import sys

BASE = "lockweave"
BOUND = "serial-bound"
BOUNDS = (BOUND, "no-lock")  # ceilings, not locks
ORDER = ["uncontended", "contended", "spread", "threads", "threads-keys"]


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    rows = [json.loads(l) for l in open(argv[0]) if l.strip().startswith("{")]
    each_retry = "--each-retry" in argv[1:]
    targets = {}
    rest = argv[1:]
    for i, a in enumerate(rest):
        if a == "--target":
            w, _, text = rest[i + 1].partition("=")
            targets[w] = text

    def label(r):
        if each_retry and r["impl"] not in (BASE,) + BOUNDS:
            return f"{r['impl']} @{r['retry_ms']}ms"
        return r["impl"]

    best = {}  # (round, label, workload) -> row with most ops/s
    for r in rows:
        k = (r["round"], label(r), r["workload"])
        if k not in best or r["ops_per_s"] > best[k]["ops_per_s"]:
            best[k] = r
    rounds = sorted({r["round"] for r in rows})
    workloads = sorted({r["workload"] for r in rows},
                       key=lambda w: (ORDER.index(w) if w in ORDER else 99, w))
    others = sorted({label(r) for r in rows if r["impl"] not in (BASE,) + BOUNDS})

    def span(vals):
        return f"{statistics.median(vals):6.2f} {min(vals):5.2f}-{max(vals):<5.2f}"

    table = []
    for w in workloads:
        for o in others:
            ops, p99, won = [], [], []
            for rd in rounds:
                a, b = best.get((rd, BASE, w)), best.get((rd, o, w))
                if not (a and b and b["ops_per_s"] and b["p99_us"]):
                    continue
                ops.append(a["ops_per_s"] / b["ops_per_s"])
                p99.append(a["p99_us"] / b["p99_us"])
                won.append(str(b["retry_ms"]))
            if not ops:
                continue
            table.append([w, o, span(ops), span(p99),
                          " ".join(f"{v:.2f}" for v in ops), ",".join(won),
                          targets.get(f"{w}/{o.split(' @')[0]}", targets.get(w, "-"))])
    head = ["workload", "other", "ops/s ratio", "p99 ratio",
            "ops/s ratio per round", "retry_ms", "target"]
    width = [max(len(r[i]) for r in table + [head]) for i in range(6)]
    print(f"paired rounds: {len(rounds)}; ratio = {BASE} / other, "
          "median and min-max over the rounds")
    for r in [head] + table:
        cells = [r[i].rjust(width[i]) if i in (2, 3) else r[i].ljust(width[i])
                 for i in range(6)]
        print("  ".join(cells + [r[6]]))
    def ratios(w, num, den):
        return [best[(rd, num, w)]["ops_per_s"] / best[(rd, den, w)]["ops_per_s"]
                for rd in rounds if (rd, num, w) in best and
                (rd, den, w) in best and best[(rd, den, w)]["ops_per_s"]]

    what = {BOUND: "the sections back to back, no lock",
            "no-lock": "the sections in flight with no lock at all"}
    for bound in BOUNDS:
        ceilings = []
        for w in workloads:
            for num, den in [(BASE, bound)] + [(bound, o) for o in others]:
                vals = ratios(w, num, den)
                if vals:
                    ceilings.append(f"{w:<12}  {num + ' / ' + den:<40}  {span(vals)}")
        if ceilings:
            print(f"{bound} ({what[bound]}): lockweave's share "
                  f"of it, and the most any lock could reach against each other")
            print("\n".join(ceilings))
    locks = [r for r in rows if r["impl"] != "no-lock"]
    viol = sum(r["violations"] for r in locks)
    failed = sum(r["failed"] for r in locks)
    print(f"violations (all runs): {viol}; failed acquisitions: {failed}")
    free = [r for r in rows if r["impl"] == "no-lock"]
    if free:
        print(f"no-lock's violations (expected: nothing excludes its sections): "
              f"{sum(r['violations'] for r in free)}")


main(sys.argv[1:])
