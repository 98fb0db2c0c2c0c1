#!/usr/bin/python3
"""Bar charts from the JSON lines written by the bench_<name> programs.

usage: /usr/bin/python3 scripts/plot_bench.py RESULTS.jsonl OUTDIR

Writes OUTDIR/bench_<name>.png per benchmark: one panel per metric, one group
of bars per parameter variant, one bar per implementation (the median), with
min-max error bars. Skipped or failed implementations are listed under the
chart. One exception: apps_rate_sweep (sink throughput against offered rate,
the AGERE paper's Figs. 12-15) is drawn as lines, a column of panels per
application, x = offered rate. Needs matplotlib (Debian: python3-matplotlib,
hence /usr/bin/python3).
When the file holds several results for the same (benchmark, variant,
metric, implementation), the last one wins. Results are reported per phase
of the machine (near or far cores: scripts/bench_table.py); a chart shows one
phase per bar: the near-phase runs where there are any, else the far ones
(the variant's label then says "far"); runs of a mixed or unknown phase only
when nothing else was measured, labelled so.
"""

import json
import re
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

IMPL_ORDER = {"troupe": 0, "caf": 1, "threads": 2}
IMPL_COLOR = {"troupe": "#d62728", "troupe_curve": "#ff9896", "caf": "#1f77b4", "threads": "#7f7f7f", "zmq": "#2ca02c"}


def load(path):
    rows, order = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except json.JSONDecodeError:
                continue
            variant = o.get("variant") or ", ".join(
                f"{k}={v}" for k, v in (o.get("params") or {}).items())
            key = (o.get("bench"), variant, o.get("metric"), o.get("impl"))
            phase = o.get("phase")
            o["variant"] = variant if phase in (None, "near") else f"{variant} ({phase})"
            if key not in rows:
                order.append(key)
            elif PHASE_RANK.get(phase, 9) > PHASE_RANK.get(rows[key].get("phase"), 9):
                continue  # a better phase of this row is already there
            rows[key] = o
    return [rows[k] for k in order]


# Which phase's figure a chart shows when a row has several (lower first).
PHASE_RANK = {None: 0, "near": 0, "far": 1, "mixed": 2, "unknown": 3}


def first_seen(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def si(x):
    """3 significant digits with an SI suffix."""
    a = abs(x)
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if a >= scale * 10 or (scale >= 1e6 and a >= scale):
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def successful(objs):
    return [o for o in objs if o.get("status", "ok") == "ok" and o.get("value") is not None]


def save(fig, bench, objs, outdir, rows):
    """Writes the figure with a footer (machine, mode, runs; the implementations
    skipped or failed, with their variants) below its `rows` rows of panels."""
    variants = first_seen(o["variant"] for o in objs)
    ok = successful(objs)
    # impl -> variants it is missing from (skipped / failed), with the reason
    missing = {}
    for o in objs:
        if o in ok:
            continue
        why = o.get("status", "?") + (f": {o['reason']}" if o.get("reason") else "")
        missing.setdefault((o["impl"], why), []).append(o["variant"])
    o0 = objs[0]
    foot = []
    if o0.get("machine"):
        foot.append(f"{o0['machine']}, {o0.get('cores', '?')} cores, {o0.get('mode', '?')} mode, "
                    f"{o0.get('runs_requested', '?')} runs")
    for (impl, why), vs in missing.items():
        vs = first_seen(vs)
        where = "all variants" if len(vs) == len(variants) else ", ".join(vs)
        foot.extend(textwrap.wrap(f"not shown: {impl} {why} ({where})", 110))
    if foot:
        fig.text(0.01, 0.005, "\n".join(foot), fontsize=7, ha="left", va="bottom")
    fig.tight_layout(rect=(0, min(0.5, 0.035 * len(foot) / rows), 1, 1))
    path = os.path.join(outdir, f"bench_{bench}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_bench(bench, objs, outdir):
    # Time series (one metric per sample: rss_client_mib_s07, ...) stay in
    # the JSON; the chart shows the figures.
    metrics = [m for m in first_seen(o["metric"] for o in objs) if not re.search(r"_s\d+$", m)]
    variants = first_seen(o["variant"] for o in objs)
    ok = successful(objs)

    n_impls = max(1, len(first_seen(o["impl"] for o in ok)))
    fig, axes = plt.subplots(len(metrics), 1, squeeze=False,
                             figsize=(max(6.0, 2.0 + 1.2 * len(variants) * n_impls),
                                      3.8 * len(metrics)))
    for ax, metric in zip(axes[:, 0], metrics):
        mobjs = [o for o in ok if o["metric"] == metric]
        if not mobjs:
            ax.set_axis_off()
            ax.set_title(f"{bench}: {metric} (no successful runs)")
            continue
        impls = sorted(first_seen(o["impl"] for o in mobjs),
                       key=lambda i: (IMPL_ORDER.get(i, 9), i))
        # Only the variants this metric was measured on (instruction counts
        # use their own small variants): no empty slots on the axis.
        present = {o["variant"] for o in objs if o["metric"] == metric}
        panel_variants = [v for v in variants if v in present]
        unit = mobjs[0].get("unit", "")
        higher = mobjs[0].get("higher_is_better", True)
        width = 0.8 / len(impls)
        tops = []
        for j, impl in enumerate(impls):
            xs, meds, lo, hi = [], [], [], []
            for i, v in enumerate(panel_variants):
                o = next((o for o in mobjs if o["variant"] == v and o["impl"] == impl), None)
                if o is None:
                    continue
                med = o.get("median", o["value"])
                mn = o.get("min") if o.get("min") is not None else med
                mx = o.get("max") if o.get("max") is not None else med
                xs.append(i - 0.4 + width * (j + 0.5))
                meds.append(med)
                lo.append(max(0.0, med - mn))
                hi.append(max(0.0, mx - med))
            if not xs:
                continue
            ax.bar(xs, meds, width * 0.9, yerr=[lo, hi], capsize=3, label=impl,
                   color=IMPL_COLOR.get(impl), edgecolor="black", linewidth=0.4,
                   error_kw={"elinewidth": 0.8})
            for x, m, h in zip(xs, meds, hi):
                tops.append(m + h)
                ax.annotate(si(m), (x, m + h), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7)
        positive = [t for t in tops if t > 0]
        if positive and max(positive) / min(positive) > 50:
            ax.set_yscale("log")
            ax.set_ylabel(f"{metric} [{unit}] (log scale)")
        else:
            ax.set_ylabel(f"{metric} [{unit}]")
            if positive:
                ax.set_ylim(0, max(positive) * 1.12)
            ax.yaxis.set_major_formatter(ticker.EngFormatter(sep=" "))
        ax.set_xticks(range(len(panel_variants)))
        ax.set_xticklabels(panel_variants, fontsize=8)
        ax.set_title(f"{bench}: {metric} ({'higher' if higher else 'lower'} is better; "
                     "median, bars span min-max)", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        ax.legend(fontsize=8)
    return save(fig, bench, objs, outdir, len(metrics))


# apps_rate_sweep is drawn as lines against the offered rate, not as bars.
SWEEP_METRICS = (("tuples_per_s", "sink tuples/s"), ("latency_p50_us", "latency p50 [us]"))


def plot_rate_sweep(bench, objs, outdir):
    """apps_rate_sweep: per application (the first word of the variant label),
    sink tuples/s and p50 latency against the offered rate (params rate x
    replicas, source tuples/s), one line per implementation (median, error
    bars span min-max); the full-speed runs (rate 0) are dashed horizontal
    lines."""
    ok = successful(objs)
    apps = first_seen(o["variant"].split()[0] for o in objs)
    fig, axes = plt.subplots(len(SWEEP_METRICS), len(apps), squeeze=False,
                             figsize=(4.6 * len(apps), 3.6 * len(SWEEP_METRICS)))
    for col, app in enumerate(apps):
        for row, (metric, label) in enumerate(SWEEP_METRICS):
            ax = axes[row, col]
            mobjs = [o for o in ok if o["metric"] == metric and o["variant"].split()[0] == app]
            impls = sorted(first_seen(o["impl"] for o in mobjs),
                           key=lambda i: (IMPL_ORDER.get(i, 9), i))
            for impl in impls:
                color = IMPL_COLOR.get(impl)
                mine = [o for o in mobjs if o["impl"] == impl]
                paced = sorted((o for o in mine if o["params"].get("rate", 0) > 0),
                               key=lambda o: o["params"]["rate"])
                if paced:
                    meds = [o.get("median", o["value"]) for o in paced]
                    lo = [max(0.0, m - (o["min"] if o.get("min") is not None else m))
                          for m, o in zip(meds, paced)]
                    hi = [max(0.0, (o["max"] if o.get("max") is not None else m) - m)
                          for m, o in zip(meds, paced)]
                    xs = [o["params"]["rate"] * o["params"].get("replicas", 1) for o in paced]
                    ax.errorbar(xs, meds, yerr=[lo, hi], marker="o", markersize=4, capsize=3,
                                color=color, label=impl, linewidth=1.2, elinewidth=0.8)
                for o in mine:
                    if o["params"].get("rate", 0) == 0:
                        ax.axhline(o.get("median", o["value"]), color=color, linestyle="--",
                                   linewidth=1, label=f"{impl} full speed")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("offered rate [source tuples/s]")
            ax.set_ylabel(label)
            ax.set_title(f"{app}: {label} vs offered rate", fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.set_axisbelow(True)
            if mobjs:
                ax.legend(fontsize=7)
            else:
                ax.text(0.5, 0.5, "no successful runs", ha="center", va="center",
                        transform=ax.transAxes)
    return save(fig, bench, objs, outdir, len(SWEEP_METRICS))


SPECIAL = {"apps_rate_sweep": plot_rate_sweep}


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    results, outdir = sys.argv[1], sys.argv[2]
    try:
        objs = load(results)
    except OSError as e:
        print(f"plot_bench.py: {e}", file=sys.stderr)
        return 2
    if not objs:
        print(f"plot_bench.py: no results in {results}", file=sys.stderr)
        return 1
    os.makedirs(outdir, exist_ok=True)
    for bench in first_seen(o.get("bench") for o in objs):
        plot = SPECIAL.get(bench, plot_bench)
        print(plot(bench, [o for o in objs if o.get("bench") == bench], outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
