#!/usr/bin/python3
"""tests/mpirun_wc_test.py: troupe-wc split over 4 processes started by Open MPI's mpirun.

  mpirun_wc_test.py TROUPE_WC

Runs troupe-wc once in one process, then as
  mpirun --oversubscribe --allow-run-as-root -np 4 troupe-wc --passes 1 \
      --parallelism 1,2,4,1 --placement "0;0,1;2,3;1" --security plaintext \
      --peers tcp://127.0.0.1:P0,...,tcp://127.0.0.1:P3
where each rank takes its rank from the launcher's environment
(OMPI_COMM_WORLD_RANK, troupe::net::from_launcher) and writes its own
--output file (through `sh -c`, which adds the rank to the file name). The
source runs on rank 0, the splitters on ranks 0 and 1, the counters on 2 and
3, the sink on 1. Checks: every rank exits 0 and prints its line
("wc (rank R of 4, ...)"); the tuples the ranks' sources and sinks count add
up to the one-process run's; the lines of the ranks' --output files (what
reached the sink, and the counters' final counts) are the one-process run's
lines. Then `mpirun -np 3` with four peers: the ranks refuse to start,
naming the launcher's size.

Loopback only (the ranks and mpirun's own connections). Every run is bounded
(RUN_S): on timeout every process of the run's session (mpirun, and the
ranks, each in a process group of its own) is killed. Exit 0: passed; 1: failed
with the reason; 77: skipped (mpirun is not Open MPI's, or not installed:
Debian's openmpi-bin, which scripts/setup installs).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

RANKS = 4
RUN_S = 120  # far longer than a run takes (under a sanitizer, on 2 loaded cores)
SKIP = 77
FLAGS = ["--passes", "1", "--parallelism", "1,2,4,1"]
PLACEMENT = "0;0,1;2,3;1"  # every rank runs a part
LINE = re.compile(r"^wc \(rank (\d+) of (\d+), placement [^)]*\): .*source (\d+) tuples.*sink (\d+) tuples", re.M)


def fail(why: str) -> None:
    print(f"FAILED: {why}")
    sys.exit(1)


def skip(why: str) -> None:
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


def kill_session(sid: int) -> None:
    """SIGKILL to every process of session `sid` (mpirun puts each rank in a
    process group of its own, so the group of mpirun alone is not enough)."""
    for _ in range(50):
        left = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":  # fields: state ppid pgrp session
                left.append(int(entry))
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def run(args: list[str], cwd: str, name: str) -> tuple[int, str, str]:
    """Runs `args` in a session of its own, bounded by RUN_S: (status, stdout, stderr)."""
    with open(os.path.join(cwd, name + ".out"), "w+") as out, open(os.path.join(cwd, name + ".err"), "w+") as err:
        p = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        try:
            p.wait(timeout=RUN_S)
        except subprocess.TimeoutExpired:
            kill_session(p.pid)
            p.wait()
            out.seek(0)
            err.seek(0)
            fail(f"{name} did not end within {RUN_S} s; killed it\nstdout:\n{out.read()}\nstderr:\n{err.read()}")
        finally:
            kill_session(p.pid)  # nothing should be left; a rank that outlived mpirun would be
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read()


def free_ports(n: int) -> list[int]:
    """n free TCP ports of 127.0.0.1 (another process may take one before a
    rank binds it: the run is then retried with others)."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def lines_of(path: str) -> list[str]:
    with open(path) as f:
        return [l for l in f.read().splitlines() if l != "# final counts"]


def mpirun(np: int, wc: str, peers: str) -> list[str]:
    # sh -c: each rank's --output file carries its rank; exec keeps one process per rank.
    return ["mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "oob_tcp_if_include", "lo",
            "-np", str(np), "sh", "-c", 'exec "$0" "$@" --output "rank$OMPI_COMM_WORLD_RANK.txt"', wc,
            *FLAGS, "--peers", peers, "--placement", PLACEMENT, "--security", "plaintext"]


def main() -> None:
    if len(sys.argv) != 2:
        fail("usage: mpirun_wc_test.py TROUPE_WC")
    wc = os.path.abspath(sys.argv[1])
    if shutil.which("mpirun") is None:
        skip("mpirun is not installed (Debian's openmpi-bin; scripts/setup installs it)")
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=60)
    if "Open MPI" not in version.stdout + version.stderr:
        skip("this test starts the ranks with Open MPI's mpirun; the one installed is another: "
             + (version.stdout + version.stderr).strip().splitlines()[0])

    with tempfile.TemporaryDirectory(prefix="troupe_mpirun_wc_") as tmp:
        code, out, err = run([wc, *FLAGS, "--output", "one.txt"], tmp, "one")
        if code != 0:
            fail(f"the one-process run exited {code}:\n{out}{err}")
        m = re.search(r"source (\d+) tuples.*sink (\d+) tuples", out)
        if not m:
            fail(f"no 'source N tuples ... sink N tuples' in the one-process run's output:\n{out}")
        one_source, one_sink = int(m.group(1)), int(m.group(2))
        one = sorted(lines_of(os.path.join(tmp, "one.txt")))
        if len(one) < 1000:
            fail(f"the one-process run wrote {len(one)} lines only")

        t0 = time.monotonic()
        for attempt in range(3):
            for r in range(RANKS):
                path = os.path.join(tmp, f"rank{r}.txt")
                if os.path.exists(path):
                    os.remove(path)
            peers = ",".join(f"tcp://127.0.0.1:{p}" for p in free_ports(RANKS))
            code, out, err = run(mpirun(RANKS, wc, peers), tmp, "mpirun")
            if code != 0 and "cannot listen at" in err and attempt < 2:
                print(f"a port was taken before a rank bound it; again with other ports:\n{err}")
                continue
            break
        took = time.monotonic() - t0
        if code != 0:
            fail(f"mpirun -np {RANKS} exited {code}:\nstdout:\n{out}\nstderr:\n{err}")
        reports = {int(r): (int(n), int(src), int(snk)) for r, n, src, snk in LINE.findall(out)}
        if sorted(reports) != list(range(RANKS)) or any(n != RANKS for n, _, _ in reports.values()):
            fail(f"expected one 'wc (rank R of {RANKS}, ...)' line per rank:\n{out}\nstderr:\n{err}")
        source = sum(src for _, src, _ in reports.values())
        sink = sum(snk for _, _, snk in reports.values())
        if (source, sink) != (one_source, one_sink):
            fail(f"the ranks' sources and sinks counted {source} and {sink} tuples, the one-process run "
                 f"{one_source} and {one_sink}:\n{out}")
        split = []
        for r in range(RANKS):
            path = os.path.join(tmp, f"rank{r}.txt")
            if not os.path.exists(path):
                fail(f"rank {r} wrote no --output file:\n{out}\nstderr:\n{err}")
            split += lines_of(path)
        split.sort()
        if split != one:
            extra = sorted(set(split) - set(one))[:5]
            missing = sorted(set(one) - set(split))[:5]
            fail(f"the ranks' output ({len(split)} lines) is not the one-process run's ({len(one)} lines); "
                 f"only split: {extra}; only one-process: {missing}")
        print(f"ok: mpirun -np {RANKS} ({took:.1f} s): {source} lines, {sink} (word, count) tuples and "
              f"{len(one)} output lines, as in one process")

        # A launcher that started another number of processes than --peers lists.
        code, out, err = run(mpirun(RANKS - 1, wc, peers), tmp, "mpirun_short")
        says = f"--peers: lists {RANKS} ranks but Open MPI started {RANKS - 1} processes (OMPI_COMM_WORLD_SIZE)"
        # (mpirun ends the other ranks once one has failed: one message at least.)
        if code == 0 or says not in err or LINE.search(out):
            fail(f"mpirun -np {RANKS - 1} with {RANKS} peers: expected the ranks to refuse with '{says}'; "
                 f"exit {code}:\n{out}{err}")
        print(f"ok: mpirun -np {RANKS - 1} with {RANKS} peers: '{says}'")


if __name__ == "__main__":
    main()
