"""Capture real API output from a running sandbox as test fixtures (run by hand, not by pytest).

What it writes, under `tests/fixtures/sandbox/` (replacing what is there):
- `healthy/<Kind>/<namespace>.<name>.json`: one object per file, exactly as the API server returned it
  except that `metadata.managedFields` is dropped (noise, and large) and LIST items get back the
  `kind`/`apiVersion` a LIST leaves out. Nodes and their Leases, the koordinator-system and
  kruise-system Deployments, DaemonSets, a few pods per DaemonSet, the manager pods, Services,
  Endpoints, EndpointSlices, the four webhook configurations, NodeMetrics, PodGroups, Events and the
  leader Leases;
- `healthy/health/<label>.status` and `.body`: raw health answers (apiserver /livez and /readyz with
  ?verbose, koord-manager pod proxy :8000/readyz, kruise-controller-manager pod proxy :8000/healthz and
  /readyz, the two webhook services via the `https:` service proxy);
- `faults/<fault>/...`: the same layout for the objects (and bodies) a fault changes, captured while it
  is active; every fault is healed before the next one;
- `captured_at.txt`: the capture time (RFC 3339), which `tests/kit/clock.py`'s NOW must match.

Run (one sandbox per machine: take the lock; the sandbox is torn down afterwards):

    flock /tmp/outpost-sandbox.lock bash -c 'export OUTPOST_SANDBOX_DIR=/tmp/capture-sbx; \
        .venv/bin/outpost sandbox up --nodes 5 && .venv/bin/python tests/kit/capture.py; \
        .venv/bin/outpost sandbox down --purge'

Options: `--state-dir` (default $OUTPOST_SANDBOX_DIR), `--out` (default tests/fixtures/sandbox),
`--no-faults` (healthy state only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from outpost.cluster import Cluster
from outpost.config import ClusterSettings, KubeconfigAuth
from outpost.kube import paths as kp
from outpost.kube.timestamps import format_time

REPO = Path(__file__).resolve().parents[2]
KOORD, KRUISE = "koordinator-system", "kruise-system"
PODS_PER_DAEMONSET = 2
NODES_KEPT = 3
EVENTS_KEPT = 6


def trim(obj: dict[str, Any], kind: kp.Kind) -> dict[str, Any]:
    obj = dict(obj)
    obj.setdefault("kind", kind.kind)
    obj.setdefault("apiVersion", kind.api_version)
    metadata = dict(obj.get("metadata") or {})
    metadata.pop("managedFields", None)
    obj["metadata"] = metadata
    return obj


class Capture:
    def __init__(self, cluster: Cluster, out: Path) -> None:
        self.cluster, self.out = cluster, out
        self.deleted: list[tuple[str, str, str]] = []

    def write(self, obj: dict[str, Any], kind: kp.Kind) -> None:
        obj = trim(obj, kind)
        metadata = obj["metadata"]
        stem = f"{metadata['namespace']}.{metadata['name']}" if metadata.get("namespace") else metadata["name"]
        target = self.out / kind.kind / f"{stem}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")

    def objects(
        self,
        kind: kp.Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        keep: int | None = None,
        pick: Callable[[dict[str, Any]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        items = self.cluster.list(kp.collection_path(kind, namespace), label_selector=label_selector)
        items = [i for i in items if pick is None or pick(i)]
        items = sorted(items, key=lambda i: (i["metadata"].get("namespace", ""), i["metadata"]["name"]))[:keep]
        for item in items:
            self.write(item, kind)
        return items

    def one(self, kind: kp.Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        obj = self.cluster.get_object(kp.object_path(kind, name, namespace))
        if obj is None:  # absent: the fault deleted it (kit.fixtures.load_state drops it from the overlay)
            self.deleted.append((kind.kind, namespace or "", name))
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "deleted.json").write_text(json.dumps(self.deleted, indent=1) + "\n")
        else:
            self.write(obj, kind)
        return obj

    def body(self, label: str, path: str, params: list[tuple[str, str]] | None = None) -> None:
        response = self.cluster.get(path, params=params, accept="text/plain", timeout=5)
        target = self.out / "health"
        target.mkdir(parents=True, exist_ok=True)
        (target / f"{label}.status").write_text(f"{response.status_code}\n")
        (target / f"{label}.body").write_text(response.text)

    def manager_pod(self, namespace: str, selector: str) -> str | None:
        pods = self.cluster.list(kp.collection_path(kp.PODS, namespace), label_selector=selector)
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return running[0]["metadata"]["name"] if running else None

    def health_bodies(self) -> None:
        self.body("apiserver_livez", "/livez", [("verbose", "")])
        self.body("apiserver_readyz", "/readyz", [("verbose", "")])
        koord = self.manager_pod(KOORD, "koord-app=koord-manager")
        if koord:
            self.body("koord_manager_readyz", kp.pod_proxy(KOORD, koord, 8000, "readyz"))
        kruise = self.manager_pod(KRUISE, "control-plane=controller-manager")
        if kruise:
            self.body("kruise_manager_healthz", kp.pod_proxy(KRUISE, kruise, 8000, "healthz"))
            self.body("kruise_manager_readyz", kp.pod_proxy(KRUISE, kruise, 8000, "readyz"))
        self.body(
            "koord_webhook_healthz",
            kp.service_proxy(KOORD, "koordinator-webhook-service", 443, "healthz", scheme="https"),
        )
        self.body(
            "kruise_webhook_healthz", kp.service_proxy(KRUISE, "kruise-webhook-service", 443, "healthz", scheme="https")
        )

    def everything(self) -> None:
        nodes = self.objects(kp.NODES, keep=NODES_KEPT)
        names = {n["metadata"]["name"] for n in nodes}
        self.objects(kp.LEASES, "kube-node-lease", pick=lambda i: i["metadata"]["name"] in names)
        self.objects(kp.NODE_METRICS, pick=lambda i: i["metadata"]["name"] in names)
        for namespace in (KOORD, KRUISE):
            self.objects(kp.DEPLOYMENTS, namespace)
            for ds in self.objects(kp.DAEMON_SETS, namespace):
                labels = (ds.get("spec") or {}).get("selector", {}).get("matchLabels") or {}
                selector = ",".join(f"{k}={v}" for k, v in labels.items())
                self.objects(kp.PODS, namespace, label_selector=selector or None, keep=PODS_PER_DAEMONSET)
            self.objects(kp.SERVICES, namespace)
            self.objects(kp.ENDPOINTS, namespace)
            self.objects(kp.ENDPOINT_SLICES, namespace)
            self.objects(kp.LEASES, namespace)
        for selector, namespace in (("koord-app=koord-manager", KOORD), ("control-plane=controller-manager", KRUISE)):
            self.objects(kp.PODS, namespace, label_selector=selector)
        for name in ("koordinator-mutating-webhook-configuration", "kruise-mutating-webhook-configuration"):
            self.one(kp.MUTATING_WEBHOOKS, name)
        for name in ("koordinator-validating-webhook-configuration", "kruise-validating-webhook-configuration"):
            self.one(kp.VALIDATING_WEBHOOKS, name)
        self.objects(kp.POD_GROUPS)
        self.objects(kp.EVENTS, keep=EVENTS_KEPT)
        self.health_bodies()


# fault -> (--target or None, what to capture while it is active; the captures write files, results unused)
FAULTS: dict[str, tuple[str | None, Callable[[Capture], object]]] = {
    "koordlet-missing": (
        None,
        lambda c: (
            c.objects(kp.DAEMON_SETS, KOORD),
            c.objects(kp.PODS, KOORD, label_selector="koord-app=koordlet"),
            c.objects(kp.NODES, keep=NODES_KEPT),
        ),
    ),
    "node-lease-stale": (
        None,
        lambda c: (c.objects(kp.LEASES, "kube-node-lease", keep=NODES_KEPT), c.objects(kp.NODES, keep=NODES_KEPT)),
    ),
    "nodemetric-stale": (None, lambda c: c.objects(kp.NODE_METRICS, keep=NODES_KEPT)),
    "podgroup-failed": (None, lambda c: c.objects(kp.POD_GROUPS)),
    "podgroup-stuck": (None, lambda c: c.objects(kp.POD_GROUPS)),
    "manager-scaled-to-zero": (
        "koord-manager",
        lambda c: (
            c.objects(kp.DEPLOYMENTS, KOORD),
            c.objects(kp.ENDPOINTS, KOORD),
            c.objects(kp.ENDPOINT_SLICES, KOORD),
        ),
    ),
    "leader-lease-stale": ("kruise-manager", lambda c: c.objects(kp.LEASES, KRUISE)),
    "backend-500": ("koord-manager", lambda c: c.health_bodies()),
    "be-evictions": (
        None,
        lambda c: c.objects(kp.EVENTS, pick=lambda e: e.get("reason") == "evictPodSuccess", keep=EVENTS_KEPT),
    ),
    "webhook-config-deleted": (
        "kruise",
        lambda c: (
            c.one(kp.MUTATING_WEBHOOKS, "kruise-mutating-webhook-configuration"),
            c.one(kp.VALIDATING_WEBHOOKS, "kruise-validating-webhook-configuration"),
        ),
    ),
}


def sandbox(state_dir: str, verb: str, *args: str) -> None:
    outpost = Path(sys.executable).with_name("outpost")
    subprocess.run([str(outpost), "sandbox", verb, "--state-dir", state_dir, *args], check=True, timeout=600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--state-dir", default=os.environ.get("OUTPOST_SANDBOX_DIR", str(Path.home() / ".outpost" / "sandbox"))
    )
    parser.add_argument("--out", default=str(REPO / "tests" / "fixtures" / "sandbox"))
    parser.add_argument("--no-faults", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    settings = ClusterSettings(
        name="outpost-sandbox", auth=KubeconfigAuth(mode="kubeconfig", path=str(Path(args.state_dir) / "kubeconfig"))
    )
    with Cluster.from_settings(settings) as cluster:
        (out / "captured_at.txt").write_text(format_time(datetime.now(UTC)) + "\n")
        Capture(cluster, out / "healthy").everything()
        if not args.no_faults:
            for fault, (target, capture) in FAULTS.items():
                sandbox(args.state_dir, "break", fault, *(["--target", target] if target else []))
                try:
                    capture(Capture(cluster, out / "faults" / fault))
                finally:
                    sandbox(args.state_dir, "heal", fault)
                print(f"captured {fault}", flush=True)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {sum(1 for f in out.rglob('*') if f.is_file())} files, {size // 1024} KiB, under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
