"""What the benchmark runs in fresh interpreters (`python -S`, so nothing but the standard library and the built
bundle can be imported, as in a function's runtime). Each prints one JSON line.

    python -S children.py import BUNDLE MODULE      import time and peak RSS of one module from the bundle
    python -S children.py first-call BUNDLE MODULE SECRET_REF
                                                  the entry import, then the first secret fetch and an EKS token
    python -S children.py invoke BUNDLE MODULE      the entry import (init), then two scheduled invocations
    python children.py import-site MODULE          one module from the venv's site-packages (`import kubernetes`)
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time
from typing import Any

SCHEDULED_EVENT: dict[str, Any] = {
    "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event",
    "source": "aws.events", "account": "123456789012", "time": "2015-10-08T16:53:06Z", "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/my-scheduled-rule"], "detail": {},
}


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed_import(module: str) -> tuple[Any, float, float]:
    started, cpu_started = time.perf_counter(), cpu()
    loaded = importlib.import_module(module)
    return loaded, time.perf_counter() - started, cpu() - cpu_started


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv: list[str]) -> dict[str, Any]:
    action = argv[0]
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
        from outpost.cluster.auth import eks_token
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
