"""The `nodes` area of `python -m kit.capture`: what the node checks read, healthy and under each fault.

What it writes under `tests/unit/fixtures/nodes/<state>/` (healthy, and one directory per fault,
captured while the fault is active; every fault is healed before the next):
`nodes.json`, `node_leases.json`, `koordlet_ds.json`, `koordlet_pods.json`, `kruise_daemon_ds.json`,
`kruise_daemon_pods.json`, `nodemetrics.json` (LIST items with kind/apiVersion restored,
managedFields dropped), `healthz.json` (kruise-daemon `/healthz:10221` through the node proxy, per
node: status and body) and `meta.json` (`captured_at`, the `now` the tests evaluate with).

Run as `python -m kit.capture nodes [STATE...]` (`kit/capture.py`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from outpost.kube.timestamps import format_time, parse_time
from outpost_sandbox import faults
from outpost_sandbox.backends.kube import Kube, SandboxApiError

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "unit" / "fixtures" / "nodes"


def trim(items: list[dict[str, Any]], kind: str, api_version: str) -> list[dict[str, Any]]:
    out = []
    for item in items:
        item = {"kind": kind, "apiVersion": api_version, **item}
        item["metadata"] = {k: v for k, v in item.get("metadata", {}).items() if k != "managedFields"}
        out.append(item)
    return out


def healthz(kube: Kube, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        try:
            response = kube.raw(f"/api/v1/nodes/{name}:10221/proxy/healthz", timeout=4)
            answers[name] = {"status": response.status_code, "body": response.text[:300]}
        except Exception as exc:  # a hang is recorded as what the client saw
            answers[name] = {"status": None, "body": f"{type(exc).__name__}: {exc}"[:300]}
    return answers


FAKE_NODES_KEPT = 5
"""A state captured on a sandbox of more nodes keeps its real nodes and this many fake ones (the first by name),
with what is theirs: the other states were captured on five."""


def keep_nodes(docs: dict[str, Any], fake_kept: int = FAKE_NODES_KEPT) -> dict[str, Any]:
    """`docs` with only the real nodes and the first `fake_kept` fake ones, and the pods, Leases and NodeMetrics
    of those nodes; the DaemonSets as captured (their status counts every node)."""
    fake = sorted(
        n["metadata"]["name"]
        for n in docs["nodes"]
        if n["metadata"].get("annotations", {}).get("kwok.x-k8s.io/node") == "fake"
    )
    dropped = set(fake[fake_kept:])
    kept = dict(docs)
    kept["nodes"] = [n for n in docs["nodes"] if n["metadata"]["name"] not in dropped]
    for key in ("node_leases", "nodemetrics"):
        kept[key] = [item for item in docs[key] if item["metadata"]["name"] not in dropped]
    for key in ("koordlet_pods", "kruise_daemon_pods"):
        kept[key] = [pod for pod in docs[key] if pod["spec"].get("nodeName") not in dropped]
    return kept


def snapshot(kube: Kube, state: str, probe_healthz: bool = False) -> None:
    directory = OUT / state
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    nodes = trim(kube.list("/api/v1/nodes"), "Node", "v1")
    docs: dict[str, Any] = {
        "nodes": nodes,
        "node_leases": trim(
            kube.list("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"),
            "Lease",
            "coordination.k8s.io/v1",
        ),
        "koordlet_ds": kube.get("/apis/apps/v1/namespaces/koordinator-system/daemonsets/koordlet", ok_missing=True),
        "koordlet_pods": trim(
            kube.list("/api/v1/namespaces/koordinator-system/pods", label_selector="koord-app=koordlet"), "Pod", "v1"
        ),
        "kruise_daemon_ds": kube.get(
            "/apis/apps/v1/namespaces/kruise-system/daemonsets/kruise-daemon", ok_missing=True
        ),
        "kruise_daemon_pods": trim(
            kube.list("/api/v1/namespaces/kruise-system/pods", label_selector="control-plane=daemon"), "Pod", "v1"
        ),
        "nodemetrics": trim(
            kube.list("/apis/slo.koordinator.sh/v1alpha1/nodemetrics"), "NodeMetric", "slo.koordinator.sh/v1alpha1"
        ),
    }
    docs = keep_nodes(docs)
    for key in ("koordlet_ds", "kruise_daemon_ds"):
        if docs[key]:
            docs[key]["metadata"].pop("managedFields", None)
    if probe_healthz:
        docs["healthz"] = healthz(kube, nodes)
    docs["meta"] = {"captured_at": format_time(now, micro=True)}
    for name, doc in docs.items():
        (directory / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"captured {state}", flush=True)


def newest_lease_expiry(kube: Kube) -> float:
    """Seconds from now until every node Lease is past its own duration (kwok-down)."""
    latest = 0.0
    for lease in kube.list("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"):
        spec = lease["spec"]
        renewed = parse_time(spec["renewTime"])
        assert renewed is not None
        latest = max(latest, renewed.timestamp() + spec["leaseDurationSeconds"])
    return latest - time.time()


def kwok_down(kube: Kube) -> None:
    """Right after kwok stops, and once every Lease is past its own duration."""
    snapshot(kube, "kwok-down-first-run")
    time.sleep(max(0.0, newest_lease_expiry(kube)) + 1)
    snapshot(kube, "kwok-down-after-lease-duration")


def _ready(item: dict[str, Any]) -> str:
    return next((c["status"] for c in item["status"].get("conditions", []) if c["type"] == "Ready"), "")


def kwok_nodes_not_ready(kube: Kube, timeout: float = 300) -> None:
    """kwok stopped long enough for the node lifecycle controller to mark every fake node not Ready and, with it,
    every pod on it NotReady (MarkPodsNotReady): what the coverage checks see of a KWOK outage."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fake = [
            n
            for n in kube.list("/api/v1/nodes")
            if n["metadata"].get("annotations", {}).get("kwok.x-k8s.io/node") == "fake"
        ]
        on_fake = {n["metadata"]["name"] for n in fake}
        agents = [
            p
            for namespace, selector in (
                ("koordinator-system", "koord-app=koordlet"),
                ("kruise-system", "control-plane=daemon"),
            )
            for p in kube.list(f"/api/v1/namespaces/{namespace}/pods", label_selector=selector)
            if p["spec"].get("nodeName") in on_fake
        ]
        if fake and all(_ready(n) != "True" for n in fake) and agents and all(_ready(p) != "True" for p in agents):
            snapshot(kube, "kwok-down-nodes-not-ready")
            return
        time.sleep(5)
    raise faults.FaultError(f"kwok-down: fake nodes and their agent pods not all NotReady within {timeout:g} s")


def main(state_dir: Path, states: list[str]) -> int:
    kube = Kube.from_kubeconfig(state_dir / "kubeconfig", timeout=15)

    def with_fault(kube: Kube, name: str, then: Callable[[], None], target: str | None = None) -> None:
        faults.break_fault(name, target=target, state_dir=state_dir)
        try:
            then()
        finally:
            faults.heal(name, state_dir=state_dir)

    plan: dict[str, Callable[[], None]] = {
        "healthy": lambda: snapshot(kube, "healthy", probe_healthz=True),
        "koordlet-missing": lambda: with_fault(kube, "koordlet-missing", lambda: snapshot(kube, "koordlet-missing")),
        "kruise-daemon-missing": lambda: with_fault(
            kube, "kruise-daemon-missing", lambda: snapshot(kube, "kruise-daemon-missing", True)
        ),
        "nodemetric-stale": lambda: with_fault(kube, "nodemetric-stale", lambda: snapshot(kube, "nodemetric-stale")),
        "node-utilization-low": lambda: with_fault(
            kube, "node-utilization-low", lambda: snapshot(kube, "node-utilization-low")
        ),
        "node-utilization-high": lambda: with_fault(
            kube, "node-utilization-high", lambda: snapshot(kube, "node-utilization-high")
        ),
        "node-lease-stale": lambda: with_fault(kube, "node-lease-stale", lambda: snapshot(kube, "node-lease-stale")),
        "kwok-down": lambda: with_fault(kube, "kwok-down", lambda: kwok_down(kube)),
        "kwok-down-nodes-not-ready": lambda: with_fault(kube, "kwok-down", lambda: kwok_nodes_not_ready(kube)),
        "backend-500": lambda: with_fault(
            kube, "backend-500", lambda: snapshot(kube, "backend-500-kruise-daemon", True), target="kruise-daemon"
        ),
        "backend-down": lambda: with_fault(
            kube, "backend-down", lambda: snapshot(kube, "backend-down-kruise-daemon", True), target="kruise-daemon"
        ),
    }
    for state in states or list(plan):
        try:
            plan[state]()
        except (SandboxApiError, faults.FaultError) as exc:
            print(f"{state}: {exc}", file=sys.stderr, flush=True)
            return 1
    return 0
