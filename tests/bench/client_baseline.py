"""The same judgements as Outpost's checks, written with the official `kubernetes` client the obvious way.

Full objects (`list_node`, `list_namespaced_pod`, ...), deserialized into the client's models, judged in Python:
what a developer who reaches for the official client would write. Run as a fresh process per measurement:

    python -m bench.client_baseline koordlet-coverage --kubeconfig FILE

Prints one JSON line {"ok": bool, "summary": str}; exit 0 when ok, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Any

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def apis(kubeconfig: str) -> tuple[Any, Any, Any]:
    """CoreV1Api, AppsV1Api, CoordinationV1Api (as Any: the judgement reads the models' optional fields freely,
    as the obvious code does)."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    return client.CoreV1Api(api), client.AppsV1Api(api), client.CoordinationV1Api(api)


def _ready(conditions: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in conditions or [])


def daemon_coverage(kubeconfig: str, namespace: str, daemonset: str, selector: str) -> tuple[bool, str]:
    core, apps, _ = apis(kubeconfig)
    apps.read_namespaced_daemon_set(daemonset, namespace)  # raises if absent
    nodes = [
        n
        for n in core.list_node().items
        if not n.spec.unschedulable and (n.metadata.labels or {}).get("type") != "virtual-kubelet"
    ]
    covered = {
        p.spec.node_name
        for p in core.list_namespaced_pod(namespace, label_selector=selector).items
        if p.status.phase == "Running" and _ready(p.status.conditions)
    }
    missing = sorted(n.metadata.name for n in nodes if n.metadata.name not in covered)
    return not missing, f"{len(nodes) - len(missing)}/{len(nodes)} nodes covered" + (
        f"; missing on {', '.join(missing[:10])}" if missing else ""
    )


def kwok_nodes(kubeconfig: str, max_lease_seconds: float) -> tuple[bool, str]:
    core, _, coordination = apis(kubeconfig)
    fake = [n for n in core.list_node().items if (n.metadata.annotations or {}).get(FAKE_NODE_ANNOTATION) == "fake"]
    leases = {lease.metadata.name: lease for lease in coordination.list_namespaced_lease("kube-node-lease").items}
    now = dt.datetime.now(dt.UTC)
    bad = []
    for node in fake:
        lease = leases.get(node.metadata.name)
        if not _ready(node.status.conditions):
            bad.append(f"{node.metadata.name}: not Ready")
        elif lease is None or lease.spec.renew_time is None:
            bad.append(f"{node.metadata.name}: no Lease")
        elif (now - lease.spec.renew_time).total_seconds() > min(
            lease.spec.lease_duration_seconds or 40, max_lease_seconds
        ):
            bad.append(f"{node.metadata.name}: Lease stale")
    return bool(fake) and not bad, f"{len(fake) - len(bad)}/{len(fake)} fake nodes Ready and renewing" + (
        f"; {', '.join(bad[:10])}" if bad else ""
    )


def reconcile(kubeconfig: str) -> tuple[bool, str]:
    core, _, _ = apis(kubeconfig)
    fake = {
        n.metadata.name
        for n in core.list_node().items
        if (n.metadata.annotations or {}).get(FAKE_NODE_ANNOTATION) == "fake"
    }
    moved = 0
    for pod in core.list_pod_for_all_namespaces(field_selector="status.phase=Pending").items:
        if pod.spec.node_name in fake and pod.metadata.deletion_timestamp is None:
            core.patch_namespaced_pod_status(
                pod.metadata.name, pod.metadata.namespace, {"status": {"phase": "Running"}}
            )
            moved += 1
    return True, f"moved {moved} Pending pod(s) to Running"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenario",
        choices=["koordlet-coverage", "kruise-daemon-coverage", "kwok-node-consistency", "kwok-pod-reconciler"],
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument(
        "--max-lease-seconds",
        type=float,
        default=600.0,
        help="kwok-node-consistency: bound on a Lease's age (the check's max_lease_duration_seconds, 600 s by default)",
    )
    args = parser.parse_args(argv)
    if args.scenario == "koordlet-coverage":
        ok, summary = daemon_coverage(args.kubeconfig, "koordinator-system", "koordlet", "koord-app=koordlet")
    elif args.scenario == "kruise-daemon-coverage":
        ok, summary = daemon_coverage(args.kubeconfig, "kruise-system", "kruise-daemon", "control-plane=daemon")
    elif args.scenario == "kwok-node-consistency":
        ok, summary = kwok_nodes(args.kubeconfig, args.max_lease_seconds)
    else:
        ok, summary = reconcile(args.kubeconfig)
    print(json.dumps({"ok": ok, "summary": summary}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
