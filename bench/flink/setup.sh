#!/usr/bin/env bash
# bench/flink/setup.sh DIR: sets up Apache Flink for bench_flink_wc in DIR
# (scripts/bench --flink runs it; default DIR: build-flink): a Python
# virtual environment with PyPI's apache-flink 2.3.0 (its jars, RocksDB
# included; about 850 MB), bench/flink/WcJob.java compiled against them with
# Debian's OpenJDK 17 into DIR/wc.jar, and DIR/lib_dir naming the jars'
# folder. Idempotent: a step whose result is there is skipped.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:-$root/build-flink}"
mkdir -p "$dir"
command -v javac >/dev/null || { echo "setup.sh: javac not found (scripts/setup installs openjdk-17-jdk-headless)" >&2; exit 1; }
if [[ ! -x "$dir/venv/bin/python3" ]]; then
  python3 -m venv "$dir/venv"
fi
if ! "$dir/venv/bin/python3" -c "import pyflink" 2>/dev/null; then
  echo "setup.sh: installing apache-flink 2.3.0 from PyPI into $dir/venv (about 850 MB)" >&2
  "$dir/venv/bin/pip" install -q apache-flink==2.3.0
fi
lib="$("$dir/venv/bin/python3" -c "import os, pyflink; print(os.path.join(os.path.dirname(pyflink.__file__), 'lib'))")"
[[ -d "$lib" ]] || { echo "setup.sh: no jars at $lib" >&2; exit 1; }
echo "$lib" >"$dir/lib_dir"
if [[ ! -f "$dir/wc.jar" || "$root/bench/flink/WcJob.java" -nt "$dir/wc.jar" ]]; then
  rm -rf "$dir/classes"
  mkdir -p "$dir/classes"
  javac -nowarn -cp "$lib/*" -d "$dir/classes" "$root/bench/flink/WcJob.java"
  jar cf "$dir/wc.jar" -C "$dir/classes" .
fi
echo "setup.sh: Apache Flink ready in $dir (jars: $lib)" >&2
