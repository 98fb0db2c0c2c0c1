#!/usr/bin/python3
"""tests/metrics_live_test.py: troupe-wc serving live metrics, checked from outside.

  metrics_live_test.py format    TROUPE_WC   scrapes /metrics twice during a run and
                                             parses it with the reference parser
                                             (prometheus_client, Debian's
                                             python3-prometheus-client)
  metrics_live_test.py dashboard TROUPE_WC [--full-speed] [--screenshot PNG]
                                             loads the dashboard in headless
                                             Chromium (Debian's chromium) twice
                                             during a run: every operator is
                                             drawn and the numbers move

troupe-wc runs with --parallelism 1,2,2,1, at 20 k lines/s (light enough for
the sanitizer builds) or, with --full-speed, as fast as it goes. The picture
in docs/observability.md is
  tests/metrics_live_test.py dashboard build-release/apps/troupe-wc \
      --full-speed --screenshot docs/img/dashboard.png

Runs /usr/bin/python3 (Debian's modules). Exit 0: passed; 1 with the reason.
The app runs for a bounded time and is always killed at the end.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

OPERATORS = ["source", "splitter", "counter", "sink"]  # wc's graph, front to back
RUN_S = 20  # the app's --duration: longer than the checks need


def fail(why: str) -> None:
    print(f"FAILED: {why}")
    sys.exit(1)


def start_app(binary: str, full_speed: bool) -> tuple[subprocess.Popen, str, tempfile.TemporaryDirectory]:
    tmp = tempfile.TemporaryDirectory()
    err = open(os.path.join(tmp.name, "stderr"), "w+")
    args = [binary, "--duration", str(RUN_S), "--parallelism", "1,2,2,1", "--metrics-port", "0"]
    if not full_speed:
        args += ["--rate", "20000"]
    app = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        err.seek(0)
        m = re.search(r"metrics on (http://127\.0\.0\.1:\d+/)", err.read())
        if m:
            return app, m.group(1), tmp
        if app.poll() is not None:
            err.seek(0)
            fail(f"{binary} ended (status {app.returncode}) before serving: {err.read()}")
        time.sleep(0.05)
    stop_app(app)
    fail("no 'metrics on http://...' line on stderr within 30 s")
    raise AssertionError


def stop_app(app: subprocess.Popen) -> None:
    if app.poll() is None:
        os.killpg(app.pid, signal.SIGKILL)
    app.wait(timeout=30)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        if r.status != 200:
            fail(f"GET {url}: status {r.status}")
        return r.read().decode()


def wait_for_tuples(base: str) -> None:
    """Until the sink has seen something (the app has started its graph)."""
    for _ in range(300):
        g = json.loads(fetch(base + "api/graphs"))["graphs"]
        if g and g[0]["stages"] and g[0]["stages"][-1]["replicas"][0]["items_in"] > 0:
            return
        time.sleep(0.1)
    fail("the sink took nothing within 30 s")


def check_format(base: str) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    def scrape() -> dict:
        families = {}
        for fam in text_string_to_metric_families(fetch(base + "metrics")):  # raises on a format error
            families[fam.name] = fam
        return families

    first = scrape()
    time.sleep(1.5)
    second = scrape()
    want = {  # family name as the parser gives it (counters lose _total) -> type
        "troupe_workers": "gauge", "troupe_live_actors": "gauge", "troupe_messages_handled": "counter",
        "troupe_dead_letters": "counter", "troupe_mailbox_length": "gauge",
        "troupe_mailbox_messages": "gauge", "process_cpu_seconds": "counter",
        "process_resident_memory_bytes": "gauge", "process_open_fds": "gauge",
        "process_start_time_seconds": "gauge",
        "troupe_stream_items_in": "counter", "troupe_stream_items_out": "counter",
        "troupe_stream_channel_fill": "gauge",
        "troupe_stream_blocked_seconds": "counter", "troupe_stream_latency_seconds": "summary",
        "troupe_stream_graph_running": "gauge",
    }
    for name, kind in want.items():
        if name not in second:
            fail(f"no metric family {name} (have: {sorted(second)})")
        if second[name].type != kind:
            fail(f"{name} is a {second[name].type}, expected a {kind}")

    def by_node(fams: dict, family: str, sample: str) -> dict:
        """node -> the sample's value summed over the node's replicas."""
        out = {}
        for s in fams[family].samples:
            if s.name == sample and s.labels.get("graph") == "wc":
                out[s.labels["node"]] = out.get(s.labels["node"], 0) + s.value
        return out

    outs1 = by_node(first, "troupe_stream_items_out", "troupe_stream_items_out_total")
    outs2 = by_node(second, "troupe_stream_items_out", "troupe_stream_items_out_total")
    if sorted(outs2) != sorted(OPERATORS):
        fail(f"nodes of wc: {sorted(outs2)}, expected {sorted(OPERATORS)}")
    if not outs2["source"] > outs1["source"]:
        fail(f"the source's items_out did not grow: {outs1['source']} then {outs2['source']}")
    rates = [name for name in second if name.endswith("_rate")]
    if rates:
        fail(f"rate gauges are served (Prometheus takes rates from the counters): {rates}")
    ins = by_node(first, "troupe_stream_items_in", "troupe_stream_items_in_total")
    # Downstream never takes more than upstream sends. Each runner publishes
    # its counters at its own batch ends, so within one scrape the splitter
    # may be a batch ahead of the source's published count: compare what the
    # splitter had taken at the first scrape with the source at the second.
    if ins["splitter"] > outs2["source"]:
        fail(f"splitter took {ins['splitter']} by the first scrape, the source sent {outs2['source']} by the second")
    print(f"format: ok ({len(second)} families; source {outs1['source']:.0f} -> {outs2['source']:.0f} tuples)")


def chromium_dump(url: str, extra: list[str]) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        fail("chromium not found (scripts/setup installs Debian's chromium)")
    with tempfile.TemporaryDirectory() as profile:
        # --no-sandbox: CI runs as root; --disable-dev-shm-usage: containers
        # often have a small /dev/shm, where Chromium would crash.
        cmd = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-extensions", "--no-first-run",
               f"--user-data-dir={profile}", "--window-size=1280,800", "--virtual-time-budget=5000", *extra, url]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"chromium exited {r.returncode}: {r.stderr[-2000:]}")
    return r.stdout


def stage_figures(dom: str) -> dict:
    """data-stage -> data-items-out of each stage element of graph wc."""
    out = {}
    for tag in re.findall(r"<g [^>]*class=\"stage\"[^>]*>", dom):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        if attrs.get("data-graph") == "wc":
            out[attrs.get("data-stage")] = attrs.get("data-items-out")
    return out


def check_dashboard(base: str, screenshot: str | None) -> None:
    first = chromium_dump(base, ["--dump-dom"])
    time.sleep(2)
    second = chromium_dump(base, ["--dump-dom"])
    for n, dom in enumerate((first, second), 1):
        polls = re.search(r'<body[^>]*data-polls="(\d+)"', dom)
        if not polls or int(polls.group(1)) < 2:
            fail(f"load {n}: the page did not poll twice (body: {polls and polls.group(0)})")
    a, b = stage_figures(first), stage_figures(second)
    if sorted(b) != sorted(OPERATORS):
        fail(f"stages drawn: {sorted(b)}, expected every operator of wc: {OPERATORS}")
    moved = [s for s in OPERATORS if s != "sink" and a.get(s) != b.get(s)]
    if not moved:
        fail(f"no figure moved between two loads: {a} then {b}")
    handled = re.search(r'id="messages-handled"[^>]*>([^<]*)<', second)
    if not handled:
        fail("no messages-handled figure in the header")
    if screenshot:
        chromium_dump(base, [f"--screenshot={os.path.abspath(screenshot)}"])
        if not os.path.exists(screenshot) or os.path.getsize(screenshot) == 0:
            fail(f"chromium wrote no screenshot to {screenshot}")
    print(f"dashboard: ok (stages {sorted(b)}; moved: {moved})")


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in ("format", "dashboard"):
        print(__doc__)
        return 2
    mode, binary, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    full_speed = "--full-speed" in rest
    screenshot = rest[rest.index("--screenshot") + 1] if "--screenshot" in rest[:-1] else None
    app, base, tmp = start_app(binary, full_speed)
    try:
        wait_for_tuples(base)
        if mode == "format":
            check_format(base)
        else:
            check_dashboard(base, screenshot)
    finally:
        stop_app(app)
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
