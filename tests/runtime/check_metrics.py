#!/usr/bin/python3
"""Read what test_metrics wrote with the Prometheus client's own parser of
the text format (Debian's python3-prometheus-client) and check it against
what the test did, site by site, and against the process's lw_stats.

usage: check_metrics.py METRICS_TEXT STATS_JSON
"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

DEDUCT = ("deduct", "mt:{id}")
PROBE = ("probe", 'mt:"q\\{id}')
HAND = ("by_hand", "h:{n}")
NONE = ("", "")

# What the test did at each site: counters exactly (renewals of probe: at
# least, the watchdog may renew once more before the release).
WANT = {
    DEDUCT: {"acquired": 6, "contended": 1, "timeouts": 0, "lost": 1},
    PROBE: {"acquired": 1, "contended": 1, "timeouts": 1, "lost": 0},
    HAND: {"acquired": 2, "contended": 0, "timeouts": 0, "lost": 0,
           "renewals": 0},
    NONE: {"acquired": 1, "contended": 0, "timeouts": 0, "lost": 0,
           "renewals": 0},
}
STATS = {"acquired": "acquired", "contended": "contended",
         "timeouts": "timed_out", "lost": "lost", "renewals": "renewed"}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    stats = json.load(open(sys.argv[2], encoding="utf-8"))
    counters, hists, sites = {}, {}, {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            site = (s.labels["function"], s.labels["key"])
            check(set(s.labels) - {"le"} == {"function", "key", "site"},
                  f"labels of {s.name}: {sorted(s.labels)}")
            check(sites.setdefault(site, s.labels["site"]) == s.labels["site"],
                  f"one site label per series: {site}")
            if fam.type == "counter":
                check(s.name == fam.name + "_total", f"name {s.name}")
                short = fam.name[len("lockweave_"):]
                check((short, site) not in counters, f"twice: {s.name} {site}")
                counters[(short, site)] = s.value
            elif fam.type == "histogram":
                h = hists.setdefault((fam.name, site), {"buckets": []})
                if s.name.endswith("_bucket"):
                    h["buckets"].append((float(s.labels["le"]), s.value))
                else:
                    h[s.name[len(fam.name) + 1:]] = s.value
            else:
                check(False, f"unexpected type {fam.type} of {fam.name}")
    check(set(sites) == set(WANT), f"sites {sorted(sites)}")
    check(sites.get(NONE) == "unannotated", "the unannotated site's label")
    for site in (DEDUCT, PROBE, HAND):
        check(sites.get(site, "").startswith("test_metrics.c:"),
              f"site label of {site}: {sites.get(site)}")

    for site, want in WANT.items():
        for name, value in want.items():
            got = counters.get((name, site))
            check(got == value, f"{name} of {site}: {got}, want {value}")
    check(counters.get(("renewals", PROBE), 0) >= 2, "probe renewed twice")
    for name, field in STATS.items():
        total = sum(v for (n, _), v in counters.items() if n == name)
        check(total == stats[field],
              f"{name}: sites sum to {total}, lw_stats says {stats[field]}")

    for (name, site), h in hists.items():
        b = h["buckets"]
        check(b == sorted(b), f"{name} {site}: buckets in order, cumulative")
        check(b and b[-1][0] == float("inf"), f"{name} {site}: +Inf bucket")
        check(b and b[-1][1] == h.get("count"), f"{name} {site}: count")
        check(h.get("sum", -1) >= 0, f"{name} {site}: sum")
    for site in WANT:
        acq = counters[("acquired", site)]
        tmo = counters[("timeouts", site)]
        wait = hists.get(("lockweave_wait_seconds", site), {})
        hold = hists.get(("lockweave_hold_seconds", site), {})
        check(wait.get("count") == acq + tmo,
              f"waits of {site}: {wait.get('count')}, want {acq + tmo}")
        check(hold.get("count") == acq,
              f"holds of {site}: {hold.get('count')}, want {acq}")
    # The renewed call held its lease through two renewals (100 ms apart
    # at least): more than the first bucket.
    hold = hists[("lockweave_hold_seconds", PROBE)]["buckets"]
    check(hold[0][1] == 0, "probe's hold above 0.1 ms")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(counters)} counters, {len(hists)} histograms, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
