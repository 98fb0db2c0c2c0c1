#!/usr/bin/env python3
"""Keeps troupe's hot paths under committed instruction ceilings.

usage: check_instructions.py BUILD_DIR [--update]

For every entry of bench/instruction_ceilings.json, runs
BUILD_DIR/bench/bench_<bench> --instructions --impl troupe (callgrind counts
the instructions of the measured region, one worker, so the figure is the
same from run to run) and compares the figure with the entry's ceiling.
Exits 1 if any figure is above its ceiling or could not be measured.

--update writes the figures just measured into the file, with new ceilings
10% above them: for a change that is meant to cost more (say why in the
commit) or that made the path cheaper (lock the gain in).
Standard library only.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CEILINGS = os.path.join(ROOT, "bench", "instruction_ceilings.json")
HEADROOM = 1.10


def measure(build_dir, entry):
    exe = os.path.join(build_dir, "bench", "bench_" + entry["bench"])
    if not os.access(exe, os.X_OK):
        raise RuntimeError(f"{exe} is not built")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.jsonl")
        cmd = [exe, "--instructions", "--impl", "troupe", "--variant", entry["variant"], "--quiet", "--json", out]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stdout}")
        with open(out, encoding="utf-8") as f:
            for line in f:
                obj = json.loads(line)
                if obj.get("metric") == entry["metric"] and obj.get("status") == "ok":
                    return float(obj["value"])
    raise RuntimeError(f"bench_{entry['bench']} reported no {entry['metric']} for variant '{entry['variant']}'")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir")
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()

    with open(CEILINGS, encoding="utf-8") as f:
        doc = json.load(f)
    failures = 0
    for entry in doc["ceilings"]:
        name = f"{entry['bench']} [{entry['variant']}] {entry['metric']}"
        try:
            value = measure(args.build_dir, entry)
        except (RuntimeError, OSError, ValueError) as e:
            print(f"FAIL {name}: {e}")
            failures += 1
            continue
        ceiling = float(entry["ceiling"])
        if args.update:
            entry["measured"] = round(value, 1)
            entry["ceiling"] = math.ceil(value * HEADROOM)
            print(f"updated {name}: {value:.1f} (ceiling {entry['ceiling']})")
        elif value > ceiling:
            print(f"FAIL {name}: {value:.1f} instructions, above the ceiling {ceiling:g} "
                  f"(committed figure {entry['measured']:g}, +{100 * (value / entry['measured'] - 1):.1f}%); "
                  "find the change that added them (valgrind --tool=callgrind and callgrind_annotate show where), "
                  "or, if the cost is meant, run scripts/check_instructions.py BUILD_DIR --update and say why in "
                  "the commit")
            failures += 1
        else:
            print(f"ok   {name}: {value:.1f} instructions (ceiling {ceiling:g}, committed figure "
                  f"{entry['measured']:g}, {100 * (value / entry['measured'] - 1):+.1f}%)")
    if args.update:
        with open(CEILINGS, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
