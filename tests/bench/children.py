"""What the benchmark runs in fresh interpreters (`python -S`, so nothing but the standard library and the built
bundle can be imported, as in a function's runtime). Each prints one JSON line.

    python -S children.py import BUNDLE MODULE      import time and peak RSS of one module from the bundle
    python -S children.py first-call BUNDLE MODULE SECRET_REF   the entry import, first secret fetch, EKS token
    python -S children.py invoke BUNDLE MODULE      the entry import (init), then two scheduled invocations
    python children.py import-site MODULE          one module from the venv's site-packages (`import kubernetes`)
    python children.py warm CONFIG CHECK...        a warm instance: each CHECK cold, then warm, on "go" from stdin
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

SCHEDULED_EVENT: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "samples" / "scheduled-event.json").read_text()
)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed_import(module: str) -> tuple[Any, float, float]:
    started, cpu_started = time.perf_counter(), cpu()
    loaded = importlib.import_module(module)
    return loaded, time.perf_counter() - started, cpu() - cpu_started


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def hwm_kib() -> int:
    """The process's peak RSS since the last `reset_peak()` (VmHWM), or since it started."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return peak_kib()


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: `echo 5 > /proc/self/clear_refs`), so one run's peak is seen
    apart from the runs before it. False where it cannot be reset (the peak is then the process's so far)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def current_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def warm_rounds(config: str, names: list[str]) -> dict[str, Any]:
    """One instance, like a function kept warm: round 1 runs every check cold (nothing kept: each anchors its
    state), round 2 runs them warm. The parent paces the runs (its "go"), so the gap between the rounds is its.
    JSON lines: {"event": "waiting"} before each run, {"event": "ran"} after it, a last {"event": "done"}."""
    out = sys.stdout
    sys.stdout = sys.stderr  # only this function's JSON lines reach the parent's pipe (main() prints the last)
    try:
        return _warm_rounds(config, names, out)
    finally:
        sys.stdout = out


def _warm_rounds(config: str, names: list[str], out: Any) -> dict[str, Any]:
    # Peaks are VmHWM, not ru_maxrss: the latter carries the (large) parent's peak across fork and exec.
    def say(event: dict[str, Any]) -> None:
        out.write(json.dumps(event) + "\n")
        out.flush()

    started, cpu_started = time.perf_counter(), cpu()
    from outpost.runner import run_check
    from outpost.settings import load_settings

    settings = load_settings(config)
    lifetime = hwm_kib()
    say(
        {
            "event": "imported",
            "seconds": time.perf_counter() - started,
            "cpu_seconds": cpu() - cpu_started,
            "rss_kib": current_kib(),
            "peak_kib": lifetime,
        }
    )
    for round_name in ("cold", "warm"):
        for name in names:
            say({"event": "waiting", "check": name, "round": round_name})
            if sys.stdin.readline().strip() != "go":
                return {"event": "done", "stopped": True, "peak_kib": lifetime}
            reset = reset_peak()
            started, cpu_started, at = time.perf_counter(), cpu(), time.monotonic()
            result = run_check(settings, name, report=False, log=False)
            seconds, cpu_seconds = time.perf_counter() - started, cpu() - cpu_started
            details = result.details or {}
            run_peak = hwm_kib()
            lifetime = max(lifetime, run_peak)
            say(
                {
                    "event": "ran",
                    "check": name,
                    "round": round_name,
                    "started_at": at,
                    "seconds": seconds,
                    "cpu_seconds": cpu_seconds,
                    "run_peak_kib": run_peak,
                    "peak_reset": reset,
                    "rss_kib": current_kib(),
                    "process_peak_kib": lifetime,
                    "status": result.status.value,
                    "summary": result.summary[:200],
                    "duration_ms": result.duration_ms,
                    "reads": details.get("reads") or {},
                    "previous_scrape": details.get("previous_scrape"),
                }
            )
    return {"event": "done", "peak_kib": lifetime}


def main(argv: list[str]) -> dict[str, Any]:
    action = argv[0]
    if action == "warm":
        return warm_rounds(argv[1], argv[2:])
    if action == "bare":
        return {"peak_kib": peak_kib()}
    if action == "import-site":
        _, seconds, _ = timed_import(argv[1])
        return {"seconds": seconds, "peak_kib": peak_kib()}
    bundle, module = argv[1], argv[2]
    sys.path[:1] = [bundle]  # the bundle replaces this script's directory at the front of the path
    entry, init_seconds, init_cpu = timed_import(module)
    out: dict[str, Any] = {"seconds": init_seconds, "init_cpu_seconds": init_cpu, "peak_kib": peak_kib()}
    if action == "import":
        return out
    if action == "first-call":
        from outpost.cluster.auth.cloud import eks_token
        from outpost.secrets import resolve

        started = time.perf_counter()
        secret = resolve(argv[3])
        out["secret_seconds"] = time.perf_counter() - started
        out["secret_ok"] = bool(secret.reveal())
        started = time.perf_counter()
        token = eks_token("bench-cluster", "eu-west-1")
        out["eks_token_seconds"] = time.perf_counter() - started
        out["eks_token_ok"] = token.startswith("k8s-aws-v1.")
        out["peak_kib"] = peak_kib()
        return out
    if action == "invoke":
        # The first invocation after the import (secrets fetched, lazy imports done), then a warm one (what an
        # instance kept warm by an every-minute schedule runs).
        for prefix in ("run", "warm"):
            started, cpu_started = time.perf_counter(), cpu()
            try:
                result = entry.handler(SCHEDULED_EVENT, None)
                status = result.get("status", "?") if isinstance(result, dict) else "?"
            except Exception as error:  # the handler raises for failed/error: recorded, not fatal to the bench
                status = f"raised {type(error).__name__}"
            out[f"{prefix}_seconds"] = time.perf_counter() - started
            out[f"{prefix}_cpu_seconds"] = cpu() - cpu_started
            out.setdefault("status", status)
        out["peak_kib"] = peak_kib()
        return out
    raise SystemExit(f"unknown action {action!r}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
