"""Outpost's benchmark, side by side in one run: `make bench` (or `make bench ARGS="--nodes 100 --growth 100"`).

One sandbox, grown in place; every contender goes through one counting proxy (bench/proxy.py). Printed, nothing
asserted: the node checks against the tutorial's kubectl pipeline and the official client (wall, bytes, requests,
peak RSS, API server CPU) beside their targets; warm against cold runs per `--growth` size; cold start from the
built bundle; `run --all`; cost per cluster-month (bench/cost.py). Method and results: docs/benchmark.md.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import cost, report
from bench.proxy import CountingProxy, Counts, throwaway_tls
from bench.report import Figures

REPO = Path(__file__).resolve().parents[2]
CHILDREN = Path(__file__).resolve().parent / "children.py"
LOCAL = REPO / "infra" / "environments" / "local.yaml"
BUNDLE_ENV = "dev"  # a deployable example for this machine's architecture (x86_64) enabling the whole catalogue
COVERAGE = ("koordlet-coverage", "kruise-daemon-coverage", "kwok-node-consistency")
WARM_CHECKS = (
    "koordlet-coverage",
    "kruise-daemon-coverage",
    "kwok-node-consistency",
    "nodemetric-freshness",
    "node-utilization",
    "apiserver-latency",
)
"""The warm contender's checks: those that read node-wide collections (followed by a warm instance) and
apiserver-latency (a warm instance judges against the scrape it kept: no wait)."""
WARM_GAP_SECONDS = 60.0
"""Default gap between the cold and the warm round: the node-wide checks are scheduled every 1-5 minutes (their
`schedule_minutes`: kwok-node-consistency 1, the others and apiserver-latency 5), so a warm instance's next run
comes 1-5 minutes after its last; 60 s is the shortest (the fewest changes to catch up on per run)."""
TODAY_COLD = {
    # Cold figures before incremental reads: the 2026-12-04 run (README's Benchmark before b62b99e).
    (100, "koordlet-coverage"): report.Baseline(53_200, 0.739),
    (100, "kruise-daemon-coverage"): report.Baseline(53_400, 0.937),
    (1000, "koordlet-coverage"): report.Baseline(514_000, 1.09),
    (1000, "kruise-daemon-coverage"): report.Baseline(524_000, 1.08),
    (5000, "koordlet-coverage"): report.Baseline(2_600_000, 4.60, 41, 64.7),
    (5000, "kruise-daemon-coverage"): report.Baseline(2_600_000, 2.68, None, 64.8),
    (5000, "kwok-node-consistency"): report.Baseline(1_400_000, 3.26, None, 73.0),
}
RECONCILER = "kwok-pod-reconciler"
BENCH_NAMESPACE = "outpost-bench"
PLACEHOLDER_TOKEN = "bench-token-replaced-by-the-proxy"
GNU_TIME = "/usr/bin/time"

# The tutorials' pipelines with the names corrected per the spec (docs: SPEC "Upstream facts"). Each exits 0 when
# its judgement is "healthy". kubectl runs with a fresh HOME, so its discovery cache is cold, as in a CronJob pod.
PIPELINES = {
    # Koordinator tutorial step 3, "find the difference", with upstream's label koord-app=koordlet. The two lists
    # are taken by command substitution rather than the tutorial's `comm <(...) <(...)`: the same requests and
    # work, but bash waits for them, so their peak RSS is seen (a process substitution is never waited for).
    "koordlet-coverage": """
nodes=$(kubectl get nodes --no-headers | awk '{print $1}' | sort)
pods=$(kubectl get pods -n koordinator-system -l koord-app=koordlet -o wide --no-headers | awk '{print $7}' | sort)
missing=$(comm -23 <(echo "$nodes") <(echo "$pods"))
if [ -n "$missing" ]; then echo "koordlet missing on: $missing" | head -c 1000; exit 1; fi
""",
    # The same pipeline for kruise-daemon (upstream label control-plane=daemon).
    "kruise-daemon-coverage": """
nodes=$(kubectl get nodes --no-headers | awk '{print $1}' | sort)
pods=$(kubectl get pods -n kruise-system -l control-plane=daemon -o wide --no-headers | awk '{print $7}' | sort)
missing=$(comm -23 <(echo "$nodes") <(echo "$pods"))
if [ -n "$missing" ]; then echo "kruise-daemon missing on: $missing" | head -c 1000; exit 1; fi
""",
    # KWOK tutorial step 5: fake nodes counted by selector. Its label selector kwok.x-k8s.io/node=fake selects
    # nothing (it is an annotation) and its --field-selector on conditions is refused, so: kwokctl's label
    # type=kwok, and Ready counted from the STATUS column.
    "kwok-node-consistency": """
READY_NODES=$(kubectl get nodes --selector=type=kwok --no-headers | awk '$2 == "Ready"' | wc -l)
TOTAL_NODES=$(kubectl get nodes --selector=type=kwok --no-headers | wc -l)
[ "$TOTAL_NODES" -gt 0 ] && [ "$READY_NODES" -eq "$TOTAL_NODES" ]
""",
    # KWOK tutorial step 3, verbatim but for the heartbeat.
    "kwok-pod-reconciler": """
kubectl get pods --all-namespaces -o json | \\
  jq -r '.items[] | select(.status.phase=="Pending") | .metadata.name + " " + .metadata.namespace' | \\
  while read name ns; do
    kubectl patch pod "$name" -n "$ns" --subresource=status \\
      --type=merge -p '{"status":{"phase":"Running"}}' >/dev/null
  done
""",
}


def say(text: str = "") -> None:
    print(text, flush=True)


def log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# Processes ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Process:
    wall_seconds: float
    peak_rss_kib: int
    cpu_seconds: float
    returncode: int
    stdout: str
    stderr: str


def run_measured(argv: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> Process:
    """Run to completion under GNU time, which reports the max RSS over the process and every descendant it waited
    for. Not wait4 from here: Linux carries a process's peak RSS across fork and exec, so a child of this (large)
    interpreter would report at least this interpreter's size; GNU time is a few hundred kB."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r", suffix=".time") as measured,
    ):
        started = time.perf_counter()
        process = subprocess.run(
            [GNU_TIME, "-q", "-f", "%M %U %S", "-o", measured.name, *argv],
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            check=False,
        )
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        fields = (measured.read().strip().splitlines() or ["0 0 0"])[-1].split()
        return Process(
            wall,
            int(fields[0]),
            float(fields[1]) + float(fields[2]),
            process.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


def child_json(argv: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    process = run_measured(argv, env)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])}... exited {process.returncode}: {process.stderr.strip()[-400:]}")
    result: dict[str, Any] = json.loads(process.stdout.strip().splitlines()[-1])
    result["process_seconds"] = process.wall_seconds
    return result


class ApiserverCpu:
    """utime + stime of the sandbox's kube-apiserver, from /proc/<pid>/stat."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")

    def seconds(self) -> float:
        if self.pid is None:
            return float("nan")
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick  # utime, stime: fields 14 and 15

    def idle_rate(self, seconds: float) -> float:
        before = self.seconds()
        time.sleep(seconds)
        return (self.seconds() - before) / seconds


@dataclass
class Bench:
    args: argparse.Namespace
    proxy: CountingProxy
    apiserver: ApiserverCpu
    work: Path
    kubeconfig: Path  # the contenders' kubeconfig: the proxy
    bin_dir: Path
    nodes: int  # the sandbox's node count (its size tier sets the node Lease duration)

    def measure(
        self,
        contender: str,
        argv: Sequence[str],
        env: dict[str, str],
        judge: Callable[[Process], tuple[bool, str]],
        api_cpu: bool = True,
    ) -> Figures:
        """One run through the proxy; with `api_cpu`, the API server's idle rate is sampled first and subtracted."""
        idle = self.apiserver.idle_rate(self.args.idle_seconds) if api_cpu else 0.0
        cpu_before = self.apiserver.seconds()
        with self.proxy.measure() as box:
            process = run_measured(argv, env)
        spent = self.apiserver.seconds() - cpu_before - idle * process.wall_seconds if api_cpu else float("nan")
        counts: Counts = box[0]
        ok, note = judge(process)
        return Figures(
            contender,
            process.wall_seconds,
            counts.bytes_to_client,
            counts.requests,
            process.peak_rss_kib,
            max(0.0, spent) if api_cpu else spent,
            ok,
            note,
            counts.request_lines,
            process.cpu_seconds,
        )

    # The three contenders -------------------------------------------------------------------------------------
    def outpost(self, check: str, config: Path, api_cpu: bool = True) -> Figures:
        argv = [sys.executable, "-m", "outpost.cli", "run", check, "--config", str(config), "--json", "--no-report"]
        return self.measure("outpost", argv, dict(os.environ), judge_outpost, api_cpu)

    def kubectl(self, scenario: str) -> Figures:
        home = Path(tempfile.mkdtemp(prefix="kubectl-home-", dir=self.work))
        env = {
            "PATH": f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "KUBECONFIG": str(self.kubeconfig),
            "LC_ALL": "C",
        }
        argv = ["bash", "-euo", "pipefail", "-c", PIPELINES[scenario]]
        try:
            return self.measure("kubectl", argv, env, judge_exit)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def client(self, scenario: str) -> Figures:
        argv = [sys.executable, "-m", "bench.client_baseline", scenario, "--kubeconfig", str(self.kubeconfig)]
        bound = lease_bound(self.nodes)
        if bound is not None:
            argv += ["--max-lease-seconds", str(bound)]
        return self.measure("k8s client", argv, dict(os.environ), judge_exit)


def judge_outpost(process: Process) -> tuple[bool, str]:
    try:
        results = json.loads(process.stdout)
    except ValueError:
        return False, f"exit {process.returncode}: {process.stderr.strip()[-200:]}"
    statuses = {r["check"]: r["status"] for r in results}
    bad = {name: status for name, status in statuses.items() if status not in ("ok", "degraded")}
    if bad:
        first = next(r for r in results if r["check"] in bad)
        return False, f"{first['status']}: {first['summary'][:160]}"
    if len(results) == 1:  # the check's own run, inside the process (the rest is interpreter and imports)
        return True, f"check {results[0].get('duration_ms', '?')} ms"
    return True, ""


def judge_exit(process: Process) -> tuple[bool, str]:
    if process.returncode == 0:
        return True, ""
    detail = (process.stdout.strip() or process.stderr.strip()).splitlines()
    return False, f"exit {process.returncode}: {detail[-1][:160] if detail else ''}"


@dataclass(frozen=True)
class WarmRun:
    """One run inside the warm contender's process."""

    figures: Figures
    reads: dict[str, str]
    previous_scrape: str | None
    started_at: float  # the child's monotonic clock
    process_peak_kib: int


def warm_contender(
    bench: Bench, config: Path, checks: Sequence[str], gap: float, api_cpu: bool = True
) -> tuple[dict[str, WarmRun], dict[str, WarmRun], dict[str, dict[str, Any]]]:
    """The warm contender: per check one child process (its function instance, all started together), every check
    run cold (round 1), then, `gap` seconds after round 1 ended, every check run warm (round 2): one gap for all.

    One process per check, not one for all: the kept state is keyed by cluster and collection, so checks sharing a
    process share it (a later check's "cold" run would follow the nodes an earlier one listed, and its warm run
    would catch up on seconds of changes instead of the gap's), and the instance's RSS would hold every check's
    imports and state, where a function holds one. Runs are sequential and each is bracketed here (the child
    waits for "go"), so the proxy's counts, and the API server's CPU (its idle rate sampled just before and
    subtracted), belong to that run only."""
    env = dict(os.environ)
    runs: dict[str, dict[str, WarmRun]] = {"cold": {}, "warm": {}}
    instances: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        children: dict[str, subprocess.Popen[str]] = {}
        for name in checks:
            err = stack.enter_context(tempfile.TemporaryFile())
            children[name] = subprocess.Popen(
                [sys.executable, str(CHILDREN), "warm", str(config), name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                text=True,
                bufsize=1,
            )
            stack.callback(_end_child, name, children[name], err)

        def line(name: str) -> dict[str, Any]:
            stdout = children[name].stdout
            text = stdout.readline() if stdout is not None else ""
            if not text:
                raise RuntimeError(f"warm contender {name} ended early (exit {children[name].poll()})")
            event: dict[str, Any] = json.loads(text)
            return event

        for name in checks:  # every instance has imported before any run starts (no run shares the CPUs with it)
            instances[name] = line(name)
        round_ended: float | None = None
        for round_name in ("cold", "warm"):
            if round_ended is not None:
                left = gap - (time.monotonic() - round_ended)
                log(f"warm contender: {left:.0f} s until the warm round")
                time.sleep(max(0.0, left - (bench.args.idle_seconds if api_cpu else 0.0)))
            for name in checks:
                waiting = line(name)
                assert waiting["event"] == "waiting"
                assert waiting["round"] == round_name
                runs[round_name][name] = _bracket(bench, children[name], name, line, api_cpu)
            round_ended = time.monotonic()
        for name in checks:
            instances[name]["peak_kib"] = line(name).get("peak_kib", 0)
    return runs["cold"], runs["warm"], instances


def _bracket(
    bench: Bench, child: subprocess.Popen[str], name: str, line: Callable[[str], dict[str, Any]], api_cpu: bool
) -> WarmRun:
    """One run of a warm contender's child, counted at the proxy between "go" and "ran"."""
    assert child.stdin is not None
    idle = bench.apiserver.idle_rate(bench.args.idle_seconds) if api_cpu else 0.0
    cpu_before, counts_before, started = bench.apiserver.seconds(), bench.proxy.counts(), time.perf_counter()
    child.stdin.write("go\n")
    child.stdin.flush()
    ran = line(name)
    wall = time.perf_counter() - started
    counts = bench.proxy.counts().minus(counts_before)
    spent = bench.apiserver.seconds() - cpu_before - idle * wall if api_cpu else float("nan")
    ok = ran["status"] in ("ok", "degraded")
    note = f"check {ran['duration_ms']} ms" if ok else f"{ran['status']}: {ran['summary'][:160]}"
    if not ran.get("peak_reset"):
        note += "; peak RSS is the process's so far (VmHWM could not be reset)"
    figures = Figures(
        f"outpost {ran['round']} (instance)",
        ran["seconds"],
        counts.bytes_to_client,
        counts.requests,
        ran["run_peak_kib"],
        max(0.0, spent) if api_cpu else spent,
        ok,
        note,
        counts.request_lines,
        ran["cpu_seconds"],
    )
    return WarmRun(figures, ran["reads"], ran.get("previous_scrape"), ran["started_at"], ran["process_peak_kib"])


def _end_child(name: str, child: subprocess.Popen[str], err: Any) -> None:
    if child.stdin is not None and not child.stdin.closed:
        child.stdin.close()  # a child still waiting for "go" stops
    try:
        code = child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait()
    if code != 0:
        err.seek(0)
        log(f"warm contender {name} exited {code}: {err.read().decode(errors='replace')[-400:]}")


def print_warm_contender(
    cold: dict[str, WarmRun], warm: dict[str, WarmRun], instances: dict[str, dict[str, Any]], gap: float
) -> None:
    imports = statistics.median(i.get("seconds", math.nan) for i in instances.values())
    say(
        f"warm contender: one process per check (a function instance), all run cold, then each run again warm "
        f"{gap:g} s after the cold round ended (node-wide checks are scheduled every 1-5 minutes); imports "
        f"{report.seconds_text(imports)} (median)"
    )
    for name, run in warm.items():
        first = cold.get(name)
        since = f"{run.started_at - first.started_at:.0f} s after its cold run" if first else "no cold run"
        instance = instances.get(name, {})
        say(
            f"  {name} ({since}; instance peak RSS {instance.get('peak_kib', 0) / 1024:.1f} MB over both runs, "
            f"{run.figures.peak_rss_kib / 1024:.1f} MB during the warm run):"
        )
        if first:
            say(f"    cold read: {report.reads_summary(first.reads, first.previous_scrape)}")
        say(f"    warm read: {report.reads_summary(run.reads, run.previous_scrape)}")


def median_figures(samples: Sequence[Figures]) -> Figures:
    first = samples[0]
    return Figures(
        first.contender,
        statistics.median(s.wall_seconds for s in samples),
        int(statistics.median(s.bytes_received for s in samples)),
        int(statistics.median(s.requests for s in samples)),
        int(statistics.median(s.peak_rss_kib for s in samples)),
        statistics.median(s.apiserver_cpu_seconds for s in samples),
        all(s.ok for s in samples),
        next((s.note for s in samples if s.note), ""),
        first.request_lines,
        statistics.median(s.cpu_seconds for s in samples),
    )


# Configuration ------------------------------------------------------------------------------------------------


def proxy_kubeconfig(path: Path, port: int, ca_file: Path) -> Path:
    import base64

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "bench",
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority-data": base64.b64encode(ca_file.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": "bench", "user": {"token": PLACEHOLDER_TOKEN}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
        "current-context": "bench",
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def lease_bound(nodes: int) -> int | None:
    """The node Lease duration of the sandbox's size tier, when it is longer than kwok-node-consistency's default
    bound on a Lease's age (past 500 nodes); None when the default holds."""
    from outpost.checks.kwok_node_consistency import KwokNodeConsistencyParams
    from outpost_sandbox.scale import scale_profile

    lease_seconds = scale_profile(nodes).node_lease_seconds
    return lease_seconds if lease_seconds > KwokNodeConsistencyParams().max_lease_duration_seconds else None


def bench_config(
    path: Path, kubeconfig: Path, state_dir: Path, nodes: int, reconciler: dict[str, Any] | None = None
) -> Path:
    """local.yaml as shipped, every identity pointed at the proxy, heartbeats as SSM references (resolved only by
    invocations that report), a longer deadline so a slow run is measured rather than cut off, and
    kwok-node-consistency told the node Lease duration this sandbox's size tier uses (as an operator of a cluster
    tuned that way would): past 500 nodes kwok's Leases last longer than the check's default bound."""
    from outpost_sandbox.state import pointed_at

    doc = pointed_at(yaml.safe_load(LOCAL.read_text()), state_dir)
    doc["cluster"]["auth"]["path"] = str(kubeconfig)
    doc["cluster"]["deadline_seconds"] = 240
    doc["cluster"]["read_timeout_seconds"] = 120
    for name, check in doc["checks"].items():
        check["heartbeat"] = f"ssm:/outpost/bench/heartbeat/{name}"
        if "cluster_auth" in check:
            check["cluster_auth"]["path"] = str(kubeconfig)
    bound = lease_bound(nodes)
    if bound is not None:
        doc["checks"]["kwok-node-consistency"].setdefault("params", {})["max_lease_duration_seconds"] = bound
    if reconciler:
        doc["checks"][RECONCILER]["params"].update(reconciler)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# Cold start ---------------------------------------------------------------------------------------------------
def build_bundle(work: Path) -> Path:
    """`outpost package --env dev --platform host`, unpacked: the bundle exactly as Lambda would unpack it."""
    import zipfile

    from outpost.tooling.packaging import command, platforms

    out = work / "build"
    target = command.build(BUNDLE_ENV, out, REPO, platforms.HOST)
    archive = next(target.glob("*.zip"))
    unpacked = work / "bundle"
    with zipfile.ZipFile(archive) as bundle:
        bundle.extractall(unpacked)
    return unpacked


@contextmanager
def moto_ssm(parameters: dict[str, str]) -> Iterator[str]:
    """A local server speaking the SSM JSON protocol (moto), holding `parameters` as SecureStrings."""
    import socket

    import boto3
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        ssm = boto3.client(
            "ssm",
            endpoint_url=url,
            region_name="eu-west-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        for name, value in parameters.items():
            ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
        yield url
    finally:
        server.stop()


def aws_env(endpoint: str, config: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "OUTPOST_CONFIG": str(config),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "PYTHONHASHSEED": "0",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def entry_modules(bundle: Path) -> list[str]:
    return sorted(f"functions.{path.parent.name}.main" for path in (bundle / "functions").glob("*/main.py"))


def cold_start(args: argparse.Namespace, bundle: Path) -> None:
    say(
        "\n== 3. Cold start from the built bundle "
        f"(`outpost package --env {BUNDLE_ENV} --platform host`; median of {args.repeat} fresh interpreters) =="
    )
    config = bundle / "infra" / "environments" / f"{BUNDLE_ENV}.yaml"
    python = sys.executable
    bare = [run_measured([python, "-S", "-c", "pass"], dict(os.environ)) for _ in range(args.repeat)]
    bare_seconds = statistics.median(p.wall_seconds for p in bare)
    bare_kib = statistics.median(p.peak_rss_kib for p in bare)
    kube = [
        child_json([python, str(CHILDREN), "import-site", "kubernetes"], dict(os.environ)) for _ in range(args.repeat)
    ]
    with moto_ssm({f"/outpost/{BUNDLE_ENV}/heartbeat/koordlet-coverage": "https://hb.example/ping/x"}) as endpoint:
        env = aws_env(endpoint, config)
        rows = []
        worst = (0.0, 0.0)
        for module in entry_modules(bundle):
            samples = [
                child_json([python, "-S", str(CHILDREN), "import", str(bundle), module], env)
                for _ in range(args.repeat)
            ]
            seconds = statistics.median(s["seconds"] for s in samples)
            peak = statistics.median(s["peak_kib"] for s in samples) / 1024
            worst = (max(worst[0], seconds), max(worst[1], peak))
            rows.append(
                [
                    module.split(".")[1],
                    report.seconds_text(seconds),
                    f"{peak:.1f} MB",
                    report.target_text(seconds <= 0.3 and peak <= 64),
                ]
            )
        kube_seconds = statistics.median(s["seconds"] for s in kube)
        kube_peak = statistics.median(s["peak_kib"] for s in kube) / 1024
        say(
            f"entry import, worst of {len(rows)} modules: {report.seconds_text(worst[0])}, {worst[1]:.1f} MB peak "
            f"RSS; `import kubernetes`: {report.seconds_text(kube_seconds)}, {kube_peak:.1f} MB "
            f"(kubernetes / entry: time {report.ratio_text(report.times(kube_seconds, worst[0]))}, memory "
            f"{report.ratio_text(report.times(kube_peak, worst[1]))}); bare `python -S -c pass`: "
            f"{report.seconds_text(bare_seconds)} (whole process), {bare_kib / 1024:.1f} MB"
        )
        say(f"target: <= 0.3 s and <= 64 MB per entry import: {report.target_text(worst[0] <= 0.3 and worst[1] <= 64)}")
        say(report.table(("entry module", "import", "peak RSS", "target"), rows))
        first = [
            child_json(
                [
                    python,
                    "-S",
                    str(CHILDREN),
                    "first-call",
                    str(bundle),
                    "functions.koordlet_coverage.main",
                    f"ssm:/outpost/{BUNDLE_ENV}/heartbeat/koordlet-coverage",
                ],
                env,
            )
            for _ in range(args.repeat)
        ]
    secret = statistics.median(s["secret_seconds"] for s in first)
    token = statistics.median(s["eks_token_seconds"] for s in first)
    peak = statistics.median(s["peak_kib"] for s in first) / 1024
    ok = all(s["secret_ok"] and s["eks_token_ok"] for s in first)
    say(
        f"first invocation, after the entry import: SSM GetParameter (local moto server; boto3 imported on this "
        f"path only) {report.seconds_text(secret)}, then EKS token minting (presign, no network) "
        f"{report.seconds_text(token)}; peak RSS then {peak:.1f} MB{'' if ok else ' (NOT OK)'}"
    )


# Sandbox scenarios --------------------------------------------------------------------------------------------
def wait_daemonsets(admin: Any, nodes: int, timeout: float) -> str:
    """Wait until koordlet and kruise-daemon are ready on `nodes` nodes (they follow a grown sandbox)."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        ready = []
        for ns, name in (("koordinator-system", "koordlet"), ("kruise-system", "kruise-daemon")):
            ds = admin.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}")
            ready.append(int(ds.get("status", {}).get("numberReady", 0)))
        state = f"koordlet {ready[0]}/{nodes}, kruise-daemon {ready[1]}/{nodes} ready"
        if min(ready) >= nodes:
            return state
        time.sleep(3)
    return state + " (timed out waiting)"


def side_by_side(bench: Bench, config: Path, scenario: str, repeat: int) -> list[Figures]:
    runs: list[list[Figures]] = [[], [], []]
    for _ in range(repeat):
        runs[0].append(bench.outpost(scenario, config))
        runs[1].append(bench.kubectl(scenario))
        runs[2].append(bench.client(scenario))
    return [median_figures(samples) for samples in runs]


def print_side_by_side(
    scenario: str, figures: list[Figures], nodes: int, coverage_targets: bool, warm: Figures | None = None
) -> None:
    ours, pipeline, client = figures
    say(f"\n-- {scenario} ({nodes} nodes) --")
    say(
        report.table(
            report.RATIO_HEADERS,
            report.ratio_rows(ours, [pipeline, client])
            + (report.ratio_rows(warm, [pipeline, client]) if warm is not None else []),
        )
    )
    if coverage_targets and warm is not None:
        print_warm_targets(warm, pipeline, nodes)
    if coverage_targets:
        bytes_ratio = report.times(pipeline.bytes_received, ours.bytes_received)
        speed = report.times(pipeline.wall_seconds, ours.wall_seconds)
        say(
            f"targets vs kubectl: bytes {report.at_least(bytes_ratio, 10)}; speed {report.at_least(speed, 5)}; "
            f"peak RSS {report.at_most(ours.peak_rss_kib / 1024, 64, 'MB')}; API server CPU "
            f"{report.seconds_text(ours.apiserver_cpu_seconds)} vs "
            f"{report.seconds_text(pipeline.apiserver_cpu_seconds)} "
            f"({report.target_text(ours.apiserver_cpu_seconds < pipeline.apiserver_cpu_seconds)})"
        )
    say(report.table(report.RAW_HEADERS, report.raw_rows(figures + ([warm] if warm is not None else []))))
    for each in figures + ([warm] if warm is not None else []):
        say(f"  {each.contender} sent: {report.request_summary(each.request_lines)}")


def print_warm_targets(warm: Figures, pipeline: Figures, nodes: int, label: str = "") -> None:
    """The coverage targets against a warm run (they are set for 5,000 nodes)."""
    bytes_ratio = report.times(pipeline.bytes_received, warm.bytes_received)
    speed = report.times(pipeline.wall_seconds, warm.wall_seconds)
    at = "" if nodes == 5000 else f" (targets are set for 5,000 nodes; this is {nodes:,})"
    say(
        f"{label}targets, WARM vs kubectl{at}: bytes {report.at_least(bytes_ratio, 10)}; "
        f"speed {report.at_least(speed, 5)}; CPU a run {report.at_most(warm.cpu_seconds * 1000, 50, 'ms')}; "
        "peak RSS with the state "
        f"{report.at_most(warm.peak_rss_kib / 1024, 64, 'MB')}"
    )


def size_section(bench: Bench, config: Path, nodes: int, final: bool) -> dict[str, list[Figures | None]]:
    """Section 0 at one size: the warm contender, then Outpost cold, kubectl and the official client (median of
    `--repeat` at the largest size, one run below it), one table. Returns, per check, [cold, warm, kubectl,
    client] (None where a contender has no such scenario)."""
    args = bench.args
    repeat = args.repeat if final else 1
    say(
        f"\n== 0. Warm and cold side by side at {nodes} nodes (warm gap {args.warm_gap:g} s; cold, kubectl and "
        f"client: {'median of ' + str(repeat) if repeat > 1 else 'one run'}) =="
    )
    log(f"warm contender at {nodes} nodes ({len(WARM_CHECKS)} checks, gap {args.warm_gap:g} s)")
    cold_in, warm, instances = warm_contender(bench, config, WARM_CHECKS, args.warm_gap)
    print_warm_contender(cold_in, warm, instances, args.warm_gap)
    table: dict[str, list[Figures | None]] = {}
    for check in WARM_CHECKS:
        log(f"cold and baselines at {nodes} nodes: {check}")
        warm_run = warm[check].figures if check in warm else None
        if check in COVERAGE:
            ours, pipeline, client = side_by_side(bench, config, check, repeat)
            table[check] = [ours, warm_run, pipeline, client]
        else:
            table[check] = [median_figures([bench.outpost(check, config) for _ in range(repeat)]), warm_run, None, None]
    rows = [row for check, figures in table.items() for row in report.side_rows(check, figures)]
    say(report.table(report.SIDE_HEADERS, rows))
    say(
        "(outpost: `outpost run NAME` in a fresh interpreter, its CPU and peak RSS the whole process; outpost warm: "
        "the second run inside the check's instance, its CPU that run's, its peak RSS the instance's during that run, "
        "kept state included)"
    )
    for check in ("koordlet-coverage", "kruise-daemon-coverage"):
        _, warmed, kubectl_run, _ = table[check]
        if warmed is not None and kubectl_run is not None:
            print_warm_targets(warmed, kubectl_run, nodes, label=f"{check}: ")
    for check in COVERAGE:
        then = TODAY_COLD.get((nodes, check))
        cold = table[check][0]
        if then is not None and cold is not None:
            say(f"{check} cold vs before incremental reads (2026-12-04 run): {report.no_worse(cold, then)}")
    return table


def make_pending_pods(admin: Any, count: int, nodes: int) -> None:
    """`count` pods bound to fake nodes, left Pending because kwok is stopped (`reconciler_scenario`).

    Each pod is created unbound (a node selector nothing matches keeps the scheduler away), then bound to a fake
    node through the binding subresource, as the scheduler binds one.
    """
    from concurrent.futures import ThreadPoolExecutor

    ns = BENCH_NAMESPACE
    if admin.get(f"/api/v1/namespaces/{ns}", ok_missing=True) is None:
        admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def one(index: int) -> None:
        name = f"pending-{index}"
        admin.create(
            f"/api/v1/namespaces/{ns}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "containers": [{"name": "c", "image": "library/busybox:1.36"}],
                    "nodeSelector": {"outpost.bench/no-such-node": "true"},
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        )
        admin.create(
            f"/api/v1/namespaces/{ns}/pods/{name}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": f"kwok-node-{index % nodes}"},
            },
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))


def pending_count(admin: Any) -> tuple[int, int]:
    """(Pending pods in the bench namespace, Pending pods elsewhere)."""
    pods = admin.list("/api/v1/pods")
    pending = [p for p in pods if p.get("status", {}).get("phase") == "Pending"]
    ours = sum(1 for p in pending if p["metadata"]["namespace"] == BENCH_NAMESPACE)
    return ours, len(pending) - ours


def delete_bench_pods(admin: Any) -> None:
    admin.delete(f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods", params={"gracePeriodSeconds": "0"})
    deadline = time.monotonic() + 120
    while admin.list(f"/api/v1/namespaces/{BENCH_NAMESPACE}/pods") and time.monotonic() < deadline:
        time.sleep(1)


def reconciler_scenario(bench: Bench, admin: Any, state_dir: Path, nodes: int, pods: int) -> list[Figures] | None:
    config = bench_config(
        bench.work / "reconciler.yaml", bench.kubeconfig, state_dir, nodes, {"max_pods": 1000, "min_pending_seconds": 0}
    )
    delete_bench_pods(admin)
    _, others = pending_count(admin)
    if others:
        say(
            f"\n-- {RECONCILER}: skipped, {others} Pending pod(s) outside {BENCH_NAMESPACE} would be patched by "
            "the tutorial's script --"
        )
        return None
    # The job moves exactly the pods kwok's `pod-ready` stage would move, so while kwok runs it never has work:
    # its case is a stopped kwok, which the scenario stages (kwok's own fault, `kwok-down`, as `sandbox break`).
    from outpost_sandbox import cluster as sandbox_cluster

    if not sandbox_cluster.stop_component("kwok", state_dir=state_dir):
        raise RuntimeError("kwok was not running: the reconciler scenario needs a sandbox whose kwok it can stop")
    try:
        return reconciler_contenders(bench, admin, config, nodes, pods)
    finally:
        delete_bench_pods(admin)
        log("restarting kwok (returns once every node Lease is renewed)")
        sandbox_cluster.start_component("kwok", state_dir=state_dir, wait=True)


def reconciler_contenders(bench: Bench, admin: Any, config: Path, nodes: int, pods: int) -> list[Figures]:
    figures = []
    for contender in ("outpost", "kubectl", "k8s client"):
        make_pending_pods(admin, pods, nodes)
        ready, _ = pending_count(admin)
        if contender == "outpost":
            result = bench.outpost(RECONCILER, config)
        elif contender == "kubectl":
            result = bench.kubectl(RECONCILER)
        else:
            result = bench.client(RECONCILER)
        left, _ = pending_count(admin)
        note = f"{ready} Pending before, {left} after"
        figures.append(
            Figures(
                result.contender,
                result.wall_seconds,
                result.bytes_received,
                result.requests,
                result.peak_rss_kib,
                result.apiserver_cpu_seconds,
                result.ok and left == 0,
                "; ".join(n for n in (result.note, note) if n),
                result.request_lines,
                result.cpu_seconds,
            )
        )
        delete_bench_pods(admin)
    return figures


def catalogue_round(bench: Bench, config: Path) -> None:
    say("\n== 4. `outpost run --all` against the slowest single check ==")
    singles = []
    for check in sorted(yaml.safe_load(config.read_text())["checks"]):
        singles.append(bench.outpost(check, config, api_cpu=False))
    env = dict(os.environ)
    argv = [sys.executable, "-m", "outpost.cli", "run", "--all", "--config", str(config), "--json", "--no-report"]
    everything = bench.measure("outpost --all", argv, env, judge_outpost, api_cpu=False)
    names = sorted(yaml.safe_load(config.read_text())["checks"])
    slowest_index = max(range(len(singles)), key=lambda i: singles[i].wall_seconds)
    slowest = singles[slowest_index]
    ratio = everything.wall_seconds / slowest.wall_seconds
    verdict = "" if everything.ok else f" (NOT all ok: {everything.note})"
    say(
        f"run --all: {report.seconds_text(everything.wall_seconds)} for {len(names)} checks, "
        f"{everything.requests} API requests, {report.size_text(everything.bytes_received)} per full round, "
        f"peak RSS {everything.peak_rss_kib / 1024:.0f} MB{verdict}"
    )
    say(
        f"slowest single check: {names[slowest_index]} {report.seconds_text(slowest.wall_seconds)}; "
        f"ratio {ratio:.2f} (target <= 1.5: {report.target_text(ratio <= 1.5)})"
    )
    rows = [
        [
            name,
            report.seconds_text(f.wall_seconds),
            str(f.requests),
            report.size_text(f.bytes_received),
            f"{f.peak_rss_kib / 1024:.0f} MB",
            "ok" if f.ok else f"NOT OK ({f.note})",
        ]
        for name, f in zip(names, singles, strict=True)
    ]
    say(report.table(("check (outpost run NAME)", "wall", "requests", "bytes", "peak RSS", "result"), rows))


def cost_section(args: argparse.Namespace, bundle: Path, config: Path, warm_runs: dict[str, Figures]) -> None:
    """`warm_runs`: the warm contender's warm runs (after `--warm-gap`), which replace the back-to-back second
    invocation as the warm figure of their checks (an ok run only)."""
    from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

    say("\n== 6. Cost per cluster-month, the whole catalogue every minute, Lambda arm64 ==")
    names = sorted(yaml.safe_load(config.read_text())["checks"])
    modules = set(entry_modules(bundle))
    samples: list[cost.RunSample] = []
    statuses: dict[str, str] = {}
    with (
        HeartbeatReceiver() as receiver,
        moto_ssm({f"/outpost/bench/heartbeat/{name}": receiver.url_for(name) for name in names}) as endpoint,
    ):
        env = aws_env(endpoint, config)
        for name in names:
            module = f"functions.{name.replace('-', '_')}.main"
            if module not in modules:
                continue
            runs = [
                child_json([sys.executable, "-S", str(CHILDREN), "invoke", str(bundle), module], env)
                for _ in range(args.cost_repeat)
            ]
            statuses[name] = ",".join(sorted({r["status"] for r in runs}))
            samples.append(
                cost.RunSample(
                    name,
                    statistics.median(r["seconds"] for r in runs),
                    statistics.median(r["init_cpu_seconds"] for r in runs),
                    statistics.median(r["run_seconds"] for r in runs),
                    statistics.median(r["run_cpu_seconds"] for r in runs),
                    statistics.median(r["peak_kib"] for r in runs) / 1024,
                    statistics.median(r["warm_seconds"] for r in runs),
                    statistics.median(r["warm_cpu_seconds"] for r in runs),
                )
            )
    measured_by: dict[str, str] = {}
    for index, sample in enumerate(samples):
        run = warm_runs.get(sample.check)
        if run is not None and run.ok:
            samples[index] = dataclasses.replace(
                sample, warm_seconds=run.wall_seconds, warm_cpu_seconds=run.cpu_seconds
            )
            measured_by[sample.check] = f"after {args.warm_gap:g} s"
        else:
            measured_by[sample.check] = "2nd invocation"
    fraction = cost.cold_fraction(cost.LAMBDA_HOURS_PER_COLD_START)
    costs, warm, cold = cost.catalogue(samples, fraction)
    common = sum(c.common_usd for c in costs)
    say(
        f"prices: ${cost.ARM64_USD_PER_GB_SECOND}/GB-s, ${cost.USD_PER_REQUEST * 1e6:.2f}/M requests "
        f"({cost.PRICES_SOURCE}); {cost.INVOCATIONS_PER_MONTH} invocations per check-month; memory = smallest size "
        f">= peak RSS x {cost.HEADROOM}; CPU time scaled by {cost.FULL_VCPU_MB} MB / size, waiting unchanged"
    )
    say(
        f"warm runs: {', '.join(c for c, by in measured_by.items() if by != '2nd invocation') or 'none'} measured "
        f"in the warm instance {args.warm_gap:g} s after their cold run (check only, no heartbeat); the others the "
        "second invocation of the same process (secret cached, heartbeat included)"
    )
    say(
        f"cold starts (assumption): one per {cost.LAMBDA_HOURS_PER_COLD_START:g} h per function on Lambda, i.e. "
        f"{fraction:.2%} of every-minute invocations (AWS: Lambda keeps an environment 'for some time' after an "
        "invocation and terminates environments 'every few hours ... even for functions that are invoked "
        f"continuously', values unpublished; measured idle lifetime 10 min > the 1-5 min schedules: "
        f"{'; '.join(cost.LAMBDA_WARM_SOURCES)}); Cloud Run functions: instances kept idle 'for an unspecified "
        f"amount of time', assumed the same one per {cost.GCP_HOURS_PER_COLD_START:g} h "
        f"({'; '.join(cost.GCP_WARM_SOURCES)})"
    )
    say(
        f"catalogue ({len(costs)} functions), per cluster-month: ${common:.2f} in the common case (warm, "
        f"{fraction:.2%} cold; target <= $1: {report.target_text(common <= 1.0)}); ${warm:.2f} if every invocation "
        f"were warm; ${cold:.2f} if every invocation were a cold start (init + first invocation billed: the "
        "cold-only upper bound)"
    )
    rows = [
        [
            s.check,
            report.seconds_text(s.init_seconds),
            report.seconds_text(s.run_seconds),
            report.seconds_text(s.warm_seconds),
            measured_by[s.check],
            report.seconds_text(s.warm_cpu_seconds),
            f"{s.peak_rss_mb:.0f} MB",
            f"{c.memory_mb} MB",
            f"${c.cold_usd:.3f}",
            f"${c.common_usd:.3f}",
            f"${c.warm_usd:.3f}",
            statuses[s.check],
        ]
        for s, c in zip(samples, costs, strict=True)
    ]
    rows.append(["total", "", "", "", "", "", "", "", f"${cold:.2f}", f"${common:.2f}", f"${warm:.2f}", ""])
    say(
        report.table(
            (
                "function",
                "init",
                "1st run",
                "warm run",
                "warm measured",
                "warm CPU",
                "peak RSS",
                "size",
                "cold-only/month",
                "common case/month",
                "all-warm/month",
                "status",
            ),
            rows,
        )
    )


GROWTH_HEADERS = (
    "nodes",
    "koordlet: outpost cold",
    "bytes",
    "outpost warm",
    "bytes",
    "kubectl",
    "bytes",
    "kruise-daemon: outpost cold",
    "bytes",
    "outpost warm",
    "bytes",
    "kubectl",
    "bytes",
)


def growth_row(nodes: int, table: dict[str, list[Figures | None]]) -> list[str]:
    """The coverage checks at one size, from that size's section 0 (Outpost cold, warm, kubectl)."""
    cells = [str(nodes)]
    for check in COVERAGE[:2]:
        for figures in table[check][:3]:
            cells += (
                [report.seconds_text(figures.wall_seconds), report.size_text(figures.bytes_received)]
                if figures is not None
                else ["n/a", "n/a"]
            )
    return cells


def machine() -> str:
    memory = next(
        (line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:")),
        "0",
    )
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return f"{os.cpu_count()} CPUs ({cpu}), {int(memory) / 1024 / 1024:.0f} GiB, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000, help="sandbox size for the side-by-side (the largest)")
    parser.add_argument("--growth", default="100,1000,5000", help="node counts for the growth table, ascending")
    parser.add_argument("--pending-pods", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--cost-repeat", type=int, default=1, help="invocations per check for the cost figures")
    parser.add_argument("--idle-seconds", type=float, default=1.0, help="API server idle-rate sample per run")
    parser.add_argument(
        "--warm-gap",
        type=float,
        default=WARM_GAP_SECONDS,
        help="seconds between the warm contender's cold and warm rounds (the node-wide checks are "
        "scheduled every 1-5 minutes; default %(default)g)",
    )
    parser.add_argument("--state-dir", default=str(Path.home() / ".outpost" / "bench-sandbox"))
    parser.add_argument("--keep", action="store_true", help="leave a sandbox this run started running")
    parser.add_argument("--skip-sandbox", action="store_true", help="cold start only")
    parser.add_argument("--skip-cold-start", action="store_true", help="sandbox figures only")
    args = parser.parse_args(argv)
    growth = sorted({int(n) for n in args.growth.split(",") if n.strip() and int(n) <= args.nodes} | {args.nodes})
    started = time.monotonic()
    say(f"Outpost benchmark -- machine: {machine()}")
    work = Path(tempfile.mkdtemp(prefix="outpost-bench-"))
    try:
        log("building the bundle")
        bundle = build_bundle(work)
        if not args.skip_cold_start:
            cold_start(args, bundle)
        if not args.skip_sandbox:
            sandbox_sections(args, growth, work, bundle)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"\nbench finished in {time.monotonic() - started:.0f} s")
    return 0


def sandbox_sections(args: argparse.Namespace, growth: list[int], work: Path, bundle: Path) -> None:
    from outpost_sandbox.backends.kube import Kube
    from outpost_sandbox.cluster import Sandbox

    sandbox = Sandbox(args.state_dir)
    started_here = sandbox.load_state() is None or not sandbox.status().up
    context, proxy_ca = throwaway_tls(work / "proxy-tls")
    try:
        growth_rows = []
        for index, nodes in enumerate(growth):
            log(f"sandbox up with {nodes} nodes (state {sandbox.state_dir})")
            up = sandbox.up(nodes=nodes)
            reader = Kube.from_kubeconfig(up.kubeconfig)
            have = len(reader.list("/api/v1/nodes"))
            # `nodes` counts fake nodes; the sandbox adds its process node (a real kubelet) beside them.
            fake = len(reader.list("/api/v1/nodes", label_selector="type=kwok"))
            say(
                f"\nsandbox: {have} nodes, {fake} of them fake "
                f"({'reused' if up.already_up else f'up in {up.seconds:.0f} s'})"
            )
            admin = Kube.from_kubeconfig(up.kubeconfig, timeout=120)
            log(wait_daemonsets(admin, have, timeout=600))
            host, port = up.server.removeprefix("https://").rsplit(":", 1)
            with CountingProxy(host, int(port), str(up.ca_path), f"Bearer {sandbox.admin_token()}", context) as proxy:
                kubeconfig = proxy_kubeconfig(work / "proxy.kubeconfig", proxy.port, proxy_ca)
                bench = Bench(
                    args, proxy, ApiserverCpu(sandbox.procs.pid("kube-apiserver")), work, kubeconfig, up.bin_dir, have
                )
                config = bench_config(work / "bench.yaml", kubeconfig, sandbox.state_dir, have)
                if fake != nodes:
                    growth_rows.append([f"{nodes} (sandbox has {fake} fake nodes: skipped)"] + [""] * 12)
                    continue
                final = index == len(growth) - 1
                table = size_section(bench, config, nodes, final)
                growth_rows.append(growth_row(nodes, table))
                if not final:
                    continue
                say(
                    f"\n== 1./2. Side by side at {nodes} nodes: Outpost (cold, and warm) vs the tutorial's kubectl "
                    f"pipeline vs the official kubernetes client (median of {args.repeat}; the runs of section 0) =="
                )
                for scenario in COVERAGE:
                    cold, warm, pipeline, client = table[scenario]
                    assert cold is not None
                    assert pipeline is not None
                    assert client is not None
                    print_side_by_side(
                        scenario,
                        [cold, pipeline, client],
                        nodes,
                        coverage_targets=scenario != "kwok-node-consistency",
                        warm=warm,
                    )
                log(f"side by side: {RECONCILER} with {args.pending_pods} Pending pods")
                figures = reconciler_scenario(bench, admin, sandbox.state_dir, nodes, args.pending_pods)
                if figures is not None:
                    print_side_by_side(
                        f"{RECONCILER}, {args.pending_pods} Pending pods on fake nodes",
                        figures,
                        nodes,
                        coverage_targets=False,
                    )
                log("catalogue round")
                catalogue_round(bench, config)
                log("cost")
                cost_section(
                    args,
                    bundle,
                    config,
                    {check: figures[1] for check, figures in table.items() if figures[1] is not None},
                )
        say("\n== 5. Growth: coverage checks, Outpost cold and warm vs kubectl pipeline (wall, bytes) ==")
        say(report.table(GROWTH_HEADERS, growth_rows))
    finally:
        if started_here and not args.keep:
            # Purged: a stopped sandbox's etcd would bring its 5,000 nodes back to the next run's 100-node step.
            log("taking the sandbox down and deleting its state (this run started it; --keep leaves it)")
            sandbox.down(purge=True)


if __name__ == "__main__":
    sys.exit(main())
