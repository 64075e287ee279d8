"""Outpost benchmark: cold start and LIST scale, printed as ratios against baselines in one run.

    make bench                       # uses (or starts) the sandbox at ~/.outpost/sandbox
    .venv/bin/python tests/bench/run.py --nodes 5000

Figures (medians of --repeat runs; ratios, because absolute times depend on the machine):
- cold start: importing a function's entry module (settings loaded and validated, adapters built) in a
  fresh interpreter, against a fresh interpreter that imports only `json`; wall time and peak RSS;
- LIST scale: every node of the sandbox through the cluster seam, full objects against metadata-only
  (PartialObjectMetadataList), which is what a check that needs only names/labels should use;
- check overhead: one apiserver-health run (two requests, parse, judge) against one raw GET /readyz.
Nothing here asserts a timing; it prints.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENTRY = REPO / "functions" / "apiserver_health" / "main.py"


def child_run(code: str, env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one fresh interpreter running `code`."""
    started = time.perf_counter()
    process = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"bench child failed: {process.stderr.strip().splitlines()[-1:]}")
    peak = int(process.stdout.strip().splitlines()[-1])
    return elapsed, peak


RSS = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def cold_start(repeat: int) -> list[tuple[str, float, float]]:
    env = {**os.environ, "OUTPOST_CONFIG": str(REPO / "infra" / "environments" / "local.yaml")}
    load = (f"import importlib.util as u; s = u.spec_from_file_location('entry', {str(ENTRY)!r}); "
            f"m = u.module_from_spec(s); s.loader.exec_module(m); {RSS}")
    baseline = [child_run(f"import json; {RSS}", env) for _ in range(repeat)]
    entry = [child_run(load, env) for _ in range(repeat)]
    base_t, base_m = statistics.median(t for t, _ in baseline), statistics.median(m for _, m in baseline)
    entry_t, entry_m = statistics.median(t for t, _ in entry), statistics.median(m for _, m in entry)
    return [("cold start: entry module vs bare interpreter", entry_t / base_t, entry_m / base_m),
            ("  absolute (entry module)", entry_t, entry_m / 1024)]


def timed(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def scale(repeat: int, nodes: int, state_dir: str | None) -> list[tuple[str, float, float]]:
    from outpost.cluster import Cluster, Deadline
    from outpost.config import ClusterSettings, KubeconfigAuth, Settings
    from outpost.runner import run_check
    from outpost_sandbox.cluster import Sandbox

    up = Sandbox(state_dir).up(nodes=nodes)
    settings = Settings(environment="bench", cluster=ClusterSettings(
        name="sandbox", auth=KubeconfigAuth(mode="kubeconfig", path=str(up.probe_kubeconfig)),
        deadline_seconds=300, read_timeout_seconds=60))
    with Cluster.from_settings(settings.cluster, Deadline(3600)) as cluster:
        count = len(cluster.list("/api/v1/nodes", metadata_only=True))
        full_bytes = len(json.dumps(cluster.list("/api/v1/nodes")))
        meta_bytes = len(json.dumps(cluster.list("/api/v1/nodes", metadata_only=True)))
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        full_t = timed(lambda: cluster.list("/api/v1/nodes"), repeat)
        meta_t = timed(lambda: cluster.list("/api/v1/nodes", metadata_only=True), repeat)
        raw_t = timed(lambda: cluster.get("/readyz"), repeat)
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    check_t = timed(lambda: run_check(settings, "apiserver-health", report=False, log=False), repeat)
    return [
        (f"LIST {count} nodes: metadata-only vs full (time, bytes)", meta_t / full_t, meta_bytes / full_bytes),
        (f"  absolute: full LIST {full_t * 1000:.0f} ms, peak RSS growth {(rss_after - rss_before) / 1024:.0f} MiB",
         full_t, full_bytes / 2**20),
        ("apiserver-health run vs one raw GET /readyz (time)", check_t / raw_t, float("nan")),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=100, help="sandbox size if it must be started")
    parser.add_argument("--state-dir", default=None)
    parser.add_argument("--skip-scale", action="store_true", help="cold start only (no sandbox)")
    args = parser.parse_args()
    rows = cold_start(args.repeat)
    if not args.skip_scale:
        rows += scale(args.repeat, args.nodes, args.state_dir)
    print(f"{'figure':72}  {'ratio/time':>10}  {'ratio/mem':>10}")
    for name, first, second in rows:
        print(f"{name:72}  {first:10.3f}  {second:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
