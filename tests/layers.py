#!/usr/bin/env python3
"""tests/layers.py: troupe's headers import only downward.

Layers, lowest first: util, runtime, actor, stream (the engine), pattern
(descriptions), spawn (pattern/spawn_pattern.hpp), api (troupe.hpp,
fwd.hpp), then the optional modules (net, opencl, metrics, rocksdb, nats, kafka), which are siblings:
neither includes the other. A public header's layer is its folder; a header under detail/
names its layer on its first line ("// layer: stream"), and so does a header
of the modules' seam under ext/ ("// layer: actor (ext: what it is for)";
runtime, actor or stream). Every
#include "troupe/..." in a header must go to the same layer or a lower one,
so a public header includes only the internals of its own layer or below;
and examples/ and apps/ (code written as users write it) include no
troupe/detail/ header at all. The optional modules reach the core through
the seam (ext/), never through detail/: their headers (troupe/<module>/ and
the umbrella troupe/<module>.hpp) include no troupe/detail/ header either.

usage: layers.py ROOT [--graph]   (--graph prints the layer-to-layer edges)
Exit status 1 with one line per broken rule.
"""
import re
import sys
from pathlib import Path

LAYERS = ["util", "runtime", "actor", "stream", "pattern", "spawn", "api", "net", "opencl", "metrics", "rocksdb", "nats", "kafka"]
OPTIONAL = {"net", "opencl", "metrics", "rocksdb", "nats", "kafka"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](troupe/[^>"]+)[>"]', re.M)
MARKER = re.compile(r"^// layer: (\w+)\s*$")
EXT_MARKER = re.compile(r"^// layer: (\w+) \(ext: [^)]+\)\s*$")
EXT_LAYERS = ("runtime", "actor", "stream")


def layer_of(rel: str, text: str) -> str:
    if rel == "troupe/pattern/spawn_pattern.hpp":
        return "spawn"
    if rel in ("troupe/troupe.hpp", "troupe/fwd.hpp"):
        return "api"
    if rel == "troupe/stream.hpp":
        return "stream"
    if rel in ("troupe/net.hpp", "troupe/opencl.hpp", "troupe/metrics.hpp", "troupe/rocksdb.hpp", "troupe/nats.hpp",
               "troupe/kafka.hpp"):
        return rel[len("troupe/") : -len(".hpp")]  # an optional module's umbrella header
    folder = rel.split("/")[1]
    if folder == "ext":
        first = text.splitlines()[0] if text else ""
        m = EXT_MARKER.match(first)
        if not m or m.group(1) not in EXT_LAYERS:
            raise ValueError(f"{rel}: an ext header must start with '// layer: <{'|'.join(EXT_LAYERS)}> (ext: ...)'")
        return m.group(1)
    if folder == "detail":
        first = text.splitlines()[0] if text else ""
        m = MARKER.match(first)
        if not m:
            raise ValueError(f"{rel}: a detail header must start with '// layer: <{'|'.join(LAYERS)}>'")
        if m.group(1) not in LAYERS:
            raise ValueError(f"{rel}: unknown layer '{m.group(1)}'")
        return m.group(1)
    if folder not in LAYERS:
        raise ValueError(f"{rel}: a header outside the layer folders ({', '.join(LAYERS[:5])}, detail)")
    return folder


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    root = Path(sys.argv[1])
    include = root / "include"
    problems, layers, texts = [], {}, {}
    for path in sorted(include.rglob("*.hpp")):
        rel = path.relative_to(include).as_posix()
        texts[rel] = path.read_text(encoding="utf-8")
        try:
            layers[rel] = layer_of(rel, texts[rel])
        except ValueError as e:
            problems.append(str(e))
    edges = {}
    for rel, text in texts.items():
        if rel not in layers:
            continue
        for target in INCLUDE.findall(text):
            if target not in layers:
                problems.append(f"{rel} includes {target}, which is not a troupe header")
                continue
            a, b = layers[rel], layers[target]
            edges[(a, b)] = edges.get((a, b), 0) + 1
            if a in OPTIONAL and target.startswith("troupe/detail/"):
                problems.append(f"{rel} ({a}) includes {target}: a module reaches the core through troupe/ext/, not detail/")
            elif a in OPTIONAL and b in OPTIONAL and a != b:
                problems.append(f"{rel} ({a}) includes {target} ({b}): optional modules do not depend on each other")
            elif LAYERS.index(b) > LAYERS.index(a):
                problems.append(f"{rel} ({a}) includes {target} ({b}): layers import only downward")
    for folder in ("examples", "apps"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp"):
                continue
            for target in INCLUDE.findall(path.read_text(encoding="utf-8")):
                if target.startswith("troupe/detail/"):
                    problems.append(f"{path.relative_to(root)} includes {target}: user code includes no detail header")
    if "--graph" in sys.argv:
        for (a, b), n in sorted(edges.items(), key=lambda e: (LAYERS.index(e[0][0]), LAYERS.index(e[0][1]))):
            print(f"{a:>8} -> {b:<8} {n}")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{len(layers)} headers, {sum(edges.values())} includes: every one goes to its own layer or a lower one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
