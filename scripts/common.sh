# shellcheck shell=bash
# scripts/common.sh: helpers shared by scripts/setup, scripts/test and
# scripts/bench. Source it; do not run it.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
#
# After sourcing: the cwd is the repository root ($TROUPE_ROOT), and
# $TROUPE_JOBS is the build/test parallelism (2 at most unless the caller
# sets TROUPE_JOBS: the reference machine has 2 cores).

TROUPE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$TROUPE_ROOT"

if [[ -z "${TROUPE_JOBS:-}" ]]; then
  TROUPE_JOBS="$(nproc 2>/dev/null || echo 2)"
  ((TROUPE_JOBS > 2)) && TROUPE_JOBS=2
  ((TROUPE_JOBS < 1)) && TROUPE_JOBS=1
fi

# Builds and test runs are niced so that the machine stays usable.
TROUPE_NICE=(nice -n 10)

log() { printf '%s: %s\n' "${0##*/}" "$*"; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# format_duration SECONDS -> "4m07s"
format_duration() {
  local s=$1
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# ensure_ninja_dir DIR: a build directory we own that was configured with
# another generator cannot be reconfigured with Ninja; start it afresh.
ensure_ninja_dir() {
  local dir=$1
  if [[ -f "$dir/CMakeCache.txt" ]] &&
     ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
    log "$dir was configured with another generator; removing it"
    rm -rf -- "$dir"
  fi
}
