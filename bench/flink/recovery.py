#!/usr/bin/env python3
"""Apache Flink's recovery after a killed TaskManager, for bench_flink_recovery.

usage: recovery.py FLINK_DIR INPUT WORK_DIR BACKEND

FLINK_DIR: where bench/flink/setup.sh set Flink up (lib_dir, wc.jar).
INPUT: the word count's input file. WORK_DIR: an empty directory this run
owns (configuration, logs, checkpoints, markers). BACKEND: heap or rocksdb.

A standalone cluster on loopback, as its documentation sets one up: one
JobManager and two TaskManagers of two slots each (one of them spare: a
standalone cluster never replaces a dead TaskManager), a fixed-delay restart
strategy (1 s), heartbeats of 1 s with a 5 s timeout (the tuned set-up of
shared/anchors/flink.md; Flink's defaults take 17-19 s), a checkpoint every
second. bench/flink/WcJob.java runs at parallelism 2. Once a checkpoint is
complete, the TaskManager running the job is killed (SIGKILL). Flink notices,
restarts every task from the last checkpoint on the spare slots, and each
counter of the new attempt writes the time of its first element.

Prints one line: "recovery_ms <from the kill to the first counter's first
element> all_ms <to the last counter's> restored <checkpoint id>", or
"error <what>" and exits 1. Every process it started is ended (SIGKILL) on the
way out, whatever happens.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

DEADLINE_S = 120


class Failure(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(shipped, conf, rpc_port, rest_port):
    shutil.copytree(shipped, conf)
    text = open(os.path.join(shipped, "config.yaml"), encoding="utf-8").read()
    opts = re.search(r"^\s+all:\s*(.*)$", text, re.M)
    if not opts:
        raise Failure("no env.java.opts.all in Flink's shipped config.yaml")
    with open(os.path.join(conf, "config.yaml"), "w", encoding="utf-8") as f:
        f.write(f"""env:
  java:
    opts:
      all: {opts.group(1)}
jobmanager:
  bind-host: localhost
  rpc:
    address: localhost
    port: {rpc_port}
  memory:
    process:
      size: 1600m
  execution:
    failover-strategy: region
taskmanager:
  bind-host: localhost
  host: localhost
  numberOfTaskSlots: 2
  memory:
    process:
      size: 1728m
parallelism:
  default: 2
rest:
  address: localhost
  bind-address: localhost
  port: {rest_port}
restart-strategy:
  type: fixed-delay
  fixed-delay:
    attempts: 10
    delay: 1 s
heartbeat:
  interval: 1000
  timeout: 5000
""")


class Cluster:
    def __init__(self, bin_dir, work):
        self.bin = bin_dir
        self.work = work
        self.procs = []
        self.rest = None
        self.env = dict(os.environ)
        self.env.update(FLINK_CONF_DIR=os.path.join(work, "conf"), FLINK_LOG_DIR=os.path.join(work, "log"),
                        FLINK_PID_DIR=work)
        os.makedirs(self.env["FLINK_LOG_DIR"], exist_ok=True)

    def start(self, script, name):
        log = open(os.path.join(self.work, "log", name + ".console"), "w", encoding="utf-8")
        p = subprocess.Popen([os.path.join(self.bin, script), "start-foreground"], env=self.env, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.rest}{path}", timeout=5) as r:
            return json.load(r)

    def wait_for(self, what, until, deadline):
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None and p.returncode not in (-signal.SIGKILL,):
                    raise Failure(f"a Flink process ended (exit {p.returncode}) while waiting for {what}; "
                                  f"logs in {self.env['FLINK_LOG_DIR']}")
            try:
                got = until()
                if got is not None:
                    return got
            except OSError:
                pass  # the REST endpoint is not up yet
            time.sleep(0.02)
        raise Failure(f"timed out waiting for {what}")

    def end(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        for p in self.procs:
            p.wait()


def markers_of(dir_):
    """(attempt, subtask) -> ms of the counters' first elements."""
    got = {}
    for name in os.listdir(dir_):
        m = re.fullmatch(r"first-(\d+)-(\d+)", name)
        if m:
            got[(int(m.group(1)), int(m.group(2)))] = int(open(os.path.join(dir_, name), encoding="ascii").read())
    return got


def run(flink_dir, input_path, work, backend):
    lib = open(os.path.join(flink_dir, "lib_dir"), encoding="utf-8").read().strip()
    pyflink = os.path.dirname(lib)
    jar = os.path.join(flink_dir, "wc.jar")
    deadline = time.monotonic() + DEADLINE_S
    rpc_port, rest_port = free_port(), free_port()
    write_config(os.path.join(pyflink, "conf"), os.path.join(work, "conf"), rpc_port, rest_port)
    markers = os.path.join(work, "markers")
    os.makedirs(markers)
    cluster = Cluster(os.path.join(pyflink, "bin"), work)
    cluster.rest = rest_port
    try:
        cluster.start("jobmanager.sh", "jobmanager")
        # TaskManagers one at a time, to know which process is which.
        pid_of = {}
        for i in range(2):
            p = cluster.start("taskmanager.sh", f"taskmanager-{i}")

            def registered():
                ids = [t["id"] for t in cluster.get("/taskmanagers")["taskmanagers"]]
                new = [t for t in ids if t not in pid_of]
                return new[0] if len(ids) == i + 1 and new else None

            pid_of[cluster.wait_for(f"TaskManager {i} to register", registered, deadline)] = p

        submit = subprocess.run([os.path.join(pyflink, "bin", "flink"), "run", "-c", "WcJob", jar, backend,
                                 input_path, "2", os.path.join(work, "ckpt"), markers],
                                env=cluster.env, capture_output=True, text=True, timeout=DEADLINE_S)
        m = re.search(r"^job_id (\w+)$", submit.stdout, re.M)
        if submit.returncode != 0 or not m:
            raise Failure(f"flink run failed (exit {submit.returncode}): {(submit.stdout + submit.stderr)[-2000:]}")
        job = m.group(1)

        def checkpointed():
            return True if cluster.get(f"/jobs/{job}/checkpoints")["counts"]["completed"] >= 1 else None

        cluster.wait_for("the first completed checkpoint", checkpointed, deadline)

        def running_on():
            for v in cluster.get(f"/jobs/{job}")["vertices"]:
                for t in cluster.get(f"/jobs/{job}/vertices/{v['id']}/taskmanagers")["taskmanagers"]:
                    if t["taskmanager-id"] in pid_of and t["status"] == "RUNNING":
                        return t["taskmanager-id"]
            return None

        victim = pid_of[cluster.wait_for("a running task", running_on, deadline)]
        if cluster.get(f"/jobs/{job}")["state"] != "RUNNING":
            raise Failure("the job ended before the kill (give it a larger input)")
        killed_ms = time.time() * 1000.0
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()

        def all_restarted():
            again = {k: v for k, v in markers_of(markers).items() if k[0] >= 1}
            return again if len({k[1] for k in again}) == 2 else None

        again = cluster.wait_for("both counters of the restarted job", all_restarted, deadline)
        restored = cluster.get(f"/jobs/{job}/checkpoints").get("latest", {}).get("restored") or {}
        first, last = min(again.values()), max(again.values())
        print(f"recovery_ms {first - killed_ms:.1f} all_ms {last - killed_ms:.1f} restored {restored.get('id', 0)}")
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{rest_port}/jobs/{job}?mode=cancel", method="PATCH")
            urllib.request.urlopen(req, timeout=5).close()
        except OSError:
            pass  # the cluster is killed next anyway
    finally:
        cluster.end()


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("heap", "rocksdb"):
        print("error usage: recovery.py FLINK_DIR INPUT WORK_DIR heap|rocksdb")
        return 1
    try:
        run(*sys.argv[1:])
    except (Failure, OSError, subprocess.SubprocessError, KeyError, ValueError) as e:
        print(f"error {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
