#!/usr/bin/env python3
"""Print one table from the JSON lines written by the bench_<name> programs.

usage: bench_table.py RESULTS.jsonl [--markdown] [--bench NAME[,NAME...]]

One row per (benchmark, parameter variant, metric, phase, implementation):
the median with its unit and the min-max spread over the runs, the ratio to
troupe in the same phase (oriented so that > 1 means troupe is better, < 1
means troupe is worse), and the medians of user CPU, system CPU and peak RSS
of the run's process. The phase is the machine's when the runs ran (the
harness probes a cache line's round trip before and after each run): near,
far, mixed (the probes around a run disagreed) or unknown (a probe got no
answer: a loaded machine); "-" for instruction counts, which have none. When the file holds several results for the same row (the file is
appended to), the last one wins. Standard library only.
"""

import argparse
import json
import math
import sys

IMPL_ORDER = {"troupe": 0, "caf": 1, "threads": 2}


def human(x):
    """3-4 significant digits with an SI suffix."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    a = abs(x)
    if a >= 1e9:
        return f"{x / 1e9:.3g} G"
    if a >= 1e6:
        return f"{x / 1e6:.3g} M"
    if a >= 1e4:
        return f"{x / 1e3:.3g} k"
    return f"{x:.4g}"


def fixed(x, decimals):
    if x is None:
        return "-"
    return f"{x:.{decimals}f}"


def load(path):
    rows = {}
    order = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"{path}:{lineno}: skipping bad JSON line: {e}", file=sys.stderr)
                continue
            key = (obj.get("bench"), obj.get("variant") or params_label(obj),
                   obj.get("metric"), obj.get("phase"), obj.get("impl"))
            if key not in rows:
                order.append(key)
            rows[key] = obj
    return [rows[k] for k in order]


def params_label(obj):
    p = obj.get("params") or {}
    return ", ".join(f"{k}={v}" for k, v in p.items())


def ratio_to_troupe(obj, troupe):
    """How many times better troupe is than `obj` (> 1: troupe wins)."""
    if troupe is None or obj.get("impl") == "troupe":
        return None
    v, t = obj.get("value"), troupe.get("value")
    if v is None or t is None or v <= 0 or t <= 0:
        return None
    return t / v if obj.get("higher_is_better", True) else v / t


def build_rows(objs, only=None):
    # group by (bench, variant, metric), keeping first-appearance order
    groups = {}
    order = []
    for o in objs:
        if only and o.get("bench") not in only:
            continue
        key = (o.get("bench"), o.get("variant") or params_label(o), o.get("metric"), o.get("phase"))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(o)
    header = ["benchmark", "variant", "phase", "impl", "median", "min-max",
              "vs troupe", "user s", "sys s", "peak RSS MiB", "runs"]
    table = []
    for key in order:
        bench, variant, metric, phase = key
        phase = phase or "-"
        items = sorted(groups[key], key=lambda o: (IMPL_ORDER.get(o.get("impl"), 9), o.get("impl")))
        troupe = next((o for o in items if o.get("impl") == "troupe"
                       and o.get("status", "ok") == "ok" and o.get("value") is not None), None)
        for o in items:
            unit = o.get("unit", "")
            better = "higher" if o.get("higher_is_better", True) else "lower"
            bench_cell = f"{bench} {metric} ({better} is better)"
            status = o.get("status", "ok")
            if status != "ok" or o.get("value") is None:
                note = status
                if o.get("reason"):
                    note += ": " + o["reason"]
                elif o.get("failures"):
                    note += ": " + o["failures"][0]
                table.append([bench_cell, variant, phase, o.get("impl", "?"), note,
                              "", "", "", "", "", f"0/{o.get('runs_requested', '?')}"])
                continue
            r = ratio_to_troupe(o, troupe)
            rss = o.get("peak_rss_kb")
            runs = f"{o.get('runs', '?')}/{o.get('runs_requested', o.get('runs', '?'))}"
            if o.get("failed_runs"):
                runs += f" ({o['failed_runs']} FAILED)"
            table.append([
                bench_cell, variant, phase, o.get("impl", "?"),
                f"{human(o.get('median', o.get('value')))} {unit}",
                f"{human(o.get('min'))} - {human(o.get('max'))}",
                "-" if r is None else f"{r:.2f}x",
                fixed(o.get("user_s"), 2), fixed(o.get("sys_s"), 2),
                "-" if rss is None else f"{rss / 1024:.1f}",
                runs,
            ])
    return header, table


def print_text(header, table):
    widths = [len(h) for h in header]
    for row in table:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    # print the benchmark name only when it changes
    def fmt(row):
        return "  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip()
    print(fmt(header))
    print(fmt(["-" * w for w in widths]))
    prev = None
    for row in table:
        shown = list(row)
        if row[0] == prev:
            shown[0] = ""
        elif prev is not None:
            print()
        prev = row[0]
        print(fmt(shown))


def print_markdown(header, table):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in table:
        print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="JSON lines file (e.g. bench/results/latest.jsonl)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--bench", help="only these benchmarks (comma separated)")
    args = ap.parse_args()
    only = set(args.bench.split(",")) if args.bench else None
    try:
        objs = load(args.results)
    except OSError as e:
        print(f"bench_table.py: {e}", file=sys.stderr)
        return 2
    if not objs:
        print(f"bench_table.py: no results in {args.results}", file=sys.stderr)
        return 1
    header, table = build_rows(objs, only)
    machine = next((o.get("machine") for o in objs if o.get("machine")), None)
    cores = next((o.get("cores") for o in objs if o.get("cores")), None)
    if args.markdown:
        print_markdown(header, table)
    else:
        print_text(header, table)
    if machine:
        print(f"\nmachine: {machine}, {cores} cores; 'vs troupe' > 1 means troupe is better")
    return 0


if __name__ == "__main__":
    sys.exit(main())
