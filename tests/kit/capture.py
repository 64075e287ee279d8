"""Capture real API output from a running sandbox as test fixtures: the one capture script (run by hand).

    cd tests && OUTPOST_SANDBOX_DIR=/tmp/sbx ../.venv/bin/python -m kit.capture AREA [STATE...]

Areas (each module's docstring says what it reads):
- `sandbox` (`kit.capture_sandbox`): the healthy sandbox as a whole, `tests/fixtures/sandbox/healthy.json`;
- `managers` (`kit.capture_managers`): manager Deployments, pods, leader Leases, pod-proxy health,
  `tests/unit/fixtures/managers/<state>.json`;
- `nodes` (`kit.capture_nodes`): nodes, node Leases, DaemonSet pods, NodeMetrics, node-proxy `/healthz`,
  `tests/unit/fixtures/nodes/<state>/`;
- `webhooks` (`kit.capture_webhooks`): webhook Services, endpoints, configurations, dry-run creates,
  `tests/unit/fixtures/webhooks/<state>/`.

`sandbox` and `managers` write `kit.captured.Captured` records; `nodes` and `webhooks` still write their own
directory layouts. Each fault is broken, captured while active and healed before the next; STATE names limit a
run to those states. A capture changes the sandbox only through its faults: keep one up for it
(`outpost sandbox up`), never a shared one another session is testing against.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kit import capture_managers, capture_nodes, capture_sandbox, capture_webhooks
from kit.captured import SANDBOX, Answer, Captured, save, trimmed
from outpost.cluster import Cluster
from outpost.config import ClusterSettings, KubeconfigAuth
from outpost.kube import paths as kp
from outpost_sandbox import faults

Objects = list[tuple[dict[str, Any], kp.Kind]]


def sandbox_healthy(cluster: Cluster) -> tuple[Objects, dict[str, Answer]]:
    capture = capture_sandbox.SandboxCapture(cluster)
    capture.everything()
    return capture.objects, capture.answers


# area -> (where its records go, its states as (fault or None, target, file stem), what it reads)
RECORDS: dict[str, tuple[Path, list[tuple[str | None, str | None, str]], Callable[[Cluster], Any]]] = {
    "sandbox": (SANDBOX, [(None, None, "healthy")], sandbox_healthy),
    "managers": (
        capture_managers.OUT,
        [(None, None, "healthy"), *capture_managers.STATES],
        capture_managers.capture,
    ),
}


def versions(cluster: Cluster) -> dict[str, str]:
    """What answered: the API server's version and the managers' images."""
    found = {"kube-apiserver": str(cluster.get_json("/version").get("gitVersion"))}
    for namespace, deployment in (
        ("koordinator-system", "koord-manager"),
        ("kruise-system", "kruise-controller-manager"),
    ):
        obj = cluster.get_object(kp.object_path(kp.DEPLOYMENTS, deployment, namespace)) or {}
        containers = obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
        found[deployment] = ", ".join(c.get("image", "?") for c in containers) or "absent"
    return found


def records(area: str, state_dir: Path, states: list[str]) -> int:
    out, plan, read = RECORDS[area]
    settings = ClusterSettings(
        name="outpost-sandbox", auth=KubeconfigAuth(mode="kubeconfig", path=str(state_dir / "kubeconfig"))
    )
    for fault, target, stem in plan:
        if states and stem not in states:
            continue
        if fault is not None:
            faults.break_fault(fault, target, state_dir)
        try:
            with Cluster.from_settings(settings) as cluster:
                captured_at = datetime.now(UTC)
                objects, answers = read(cluster)
                source = {
                    "command": f"python -m kit.capture {area}",
                    "fault": fault,
                    "target": target,
                    "versions": versions(cluster),
                }
        finally:
            if fault is not None:
                faults.heal(fault, state_dir=state_dir)
        kept = [trimmed(obj, kind.kind, kind.api_version) for obj, kind in objects]
        save(out / f"{stem}.json", Captured(stem, captured_at, kept, answers, source))
        print(f"captured {area} {stem}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kit.capture", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("area", choices=[*RECORDS, "nodes", "webhooks"])
    parser.add_argument("states", nargs="*", help="only these states (file stems); default: every state")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(os.environ.get("OUTPOST_SANDBOX_DIR") or Path.home() / ".outpost" / "sandbox"),
    )
    args = parser.parse_args(argv)
    if args.area == "nodes":
        return capture_nodes.main(args.state_dir, args.states)
    if args.area == "webhooks":
        capture_webhooks.main(args.state_dir, args.states)
        return 0
    return records(args.area, args.state_dir, args.states)


if __name__ == "__main__":
    sys.exit(main())
