"""Fault injection for the sandbox: `outpost sandbox break FAULT [--target T]` and `heal [FAULT]`.

Every fault is a real outcome seen through the API server, one per "what fails it" of the check
catalogue (SPEC.md): a backend that answers 500 or hangs, a DaemonSet that the real controller
takes off a node, a node kwok stops renewing, a priority level that answers 429, a certificate
that is about to expire, a stopped etcd. Guarantees:
- `break_fault` returns only when the fault is observable (or raises `FaultError` saying what did
  not take effect); breaking an already active fault is a no-op.
- Each active fault is recorded with what is needed to undo it in `<state>/systems/faults.json`;
  `heal()` undoes every recorded fault (newest first), `heal(name)` only that one, and returns
  when the system is back to healthy for what that fault touched.
- Messages are one line naming the fault and the object; no credential appears in any of them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outpost.errors import OutpostError
from outpost_sandbox import pki, systems
from outpost_sandbox.backends.behaviour import (
    DEFAULT_CPU_RATIO,
    TARGETS,
    TLS_TARGETS,
    cpu_usage_millis,
    read_behaviour,
    set_target,
    write_behaviour,
)
from outpost_sandbox.backends.kube import Kube, SandboxApiError, object_path
from outpost_sandbox.poll import poll_until

NO_KOORDLET_LABEL = "outpost.sandbox/no-koordlet"
NO_KRUISE_DAEMON_LABEL = "outpost.sandbox/no-kruise-daemon"
APF_NAME = "outpost-sandbox-overload"
APF_LOAD_USER = "outpost-sandbox:apf-load"
DEFAULT_PROBE_SUBJECT = "user:outpost-probe"
FAULT_PREFIX = "outpost-fault"
MANAGERS = {"koord-manager": "koordinator-system", "kruise-controller-manager": "kruise-system"}
LEADER_LEASES = {"koordinator-manager": "koordinator-system", "koord-scheduler": "koordinator-system",
                 "koord-descheduler": "koordinator-system", "kruise-manager": "kruise-system"}
WEBHOOK_CONFIGS = {
    "koordinator": ("koordinator-mutating-webhook-configuration",
                    "koordinator-validating-webhook-configuration"),
    "kruise": ("kruise-mutating-webhook-configuration", "kruise-validating-webhook-configuration"),
}


# backend target -> the catalogue checks that read it
TARGET_CHECKS: dict[str, tuple[str, ...]] = {
    "koord-manager": ("koord-manager-health",),
    "koord-webhook": ("koord-webhook", "admission-dry-run"),
    "koordlet": (),
    "kruise-manager": ("kruise-manager-health",),
    "kruise-webhook": ("kruise-webhook", "admission-dry-run"),
    "kruise-daemon": ("kruise-daemon-coverage",),
    "ls-workload": ("ls-latency",),
}


class FaultError(OutpostError):
    """A fault could not be injected or healed."""


@dataclass
class Ctx:
    state_dir: Path
    target: str | None
    options: dict[str, Any] = field(default_factory=dict)
    _kube: Kube | None = None

    @property
    def sdir(self) -> Path:
        return systems.systems_dir(self.state_dir)

    @property
    def kube(self) -> Kube:
        if self._kube is None:
            self._kube = Kube.from_kubeconfig(self.state_dir / "kubeconfig", timeout=15)
        return self._kube

    def close(self) -> None:
        if self._kube is not None:
            self._kube.close()


Apply = Callable[[Ctx], dict[str, Any]]
Heal = Callable[[Ctx, dict[str, Any]], None]


@dataclass(frozen=True)
class Fault:
    name: str
    checks: tuple[str, ...]
    help: str
    apply: Apply
    heal: Heal
    target_help: str = ""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _ts(t: dt.datetime, micro: bool = False) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _age(timestamp: object) -> float:
    """Seconds since an RFC 3339 time from an object (a missing one counts as the epoch)."""
    then = dt.datetime.fromisoformat(str(timestamp or "1970-01-01T00:00:00Z").replace("Z", "+00:00"))
    return (_now() - then).total_seconds()


def _wait(what: str, timeout: float, predicate: Callable[[], bool]) -> None:
    poll_until(what, timeout, predicate, retry_on=(SandboxApiError,), fail=FaultError)


def _need(ctx: Ctx, choices: list[str] | tuple[str, ...] | None, what: str, default: str | None = None) -> str:
    target = ctx.target or default
    if target is None:
        raise FaultError(f"--target {what} is required (one of: {', '.join(choices or [])})")
    if choices is not None and target not in choices:
        raise FaultError(f"--target {target!r}: not a {what} (one of: {', '.join(choices)})")
    return target


def _nodes(ctx: Ctx) -> list[str]:
    return sorted(n["metadata"]["name"] for n in ctx.kube.get("/api/v1/nodes")["items"])


def _node_target(ctx: Ctx) -> str:
    nodes = _nodes(ctx)
    if not nodes:
        raise FaultError("no nodes in the sandbox")
    return _need(ctx, nodes, "node", default=nodes[0])


# ---- backend behaviour -----------------------------------------------------------------------------
def _backend(mode: str, targets: frozenset[str] | None = None) -> tuple[Apply, Heal]:
    allowed = sorted(targets or TARGETS)

    def apply(ctx: Ctx) -> dict[str, Any]:
        target = _need(ctx, allowed, "backend target")
        delay = int(ctx.options.get("delay_ms") or 3000) if mode == "slow" else 0
        try:
            set_target(ctx.sdir, target, mode, delay)
        except ValueError as exc:
            raise FaultError(str(exc)) from None
        return {"target": target}

    def heal(ctx: Ctx, undo: dict[str, Any]) -> None:
        set_target(ctx.sdir, undo["target"], "ok")

    return apply, heal


# ---- DaemonSet coverage --------------------------------------------------------------------------
def _ds_missing(label: str, ns: str, ds: str) -> tuple[Apply, Heal]:
    def pods_on(ctx: Ctx, node: str) -> list[str]:
        sel = "koord-app=koordlet" if ds == "koordlet" else "control-plane=daemon"
        pods = ctx.kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=sel,
                            fieldSelector=f"spec.nodeName={node}")["items"]
        return [p["metadata"]["name"] for p in pods]

    def apply(ctx: Ctx) -> dict[str, Any]:
        node = _node_target(ctx)
        ctx.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {label: "true"}}})
        _wait(f"daemonset {ns}/{ds} to leave node {node}", 90, lambda: not pods_on(ctx, node))
        return {"node": node}

    def heal(ctx: Ctx, undo: dict[str, Any]) -> None:
        node = undo["node"]
        ctx.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {label: None}}})
        _wait(f"daemonset {ns}/{ds} back on node {node}", 90,
              lambda: systems.daemonset_ready(ctx.kube, ns, ds) and bool(pods_on(ctx, node)))

    return apply, heal


# ---- node liveness (kwok) ------------------------------------------------------------------------
def _node_ready(ctx: Ctx, node: str) -> bool:
    n = ctx.kube.get(f"/api/v1/nodes/{node}")
    return any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or [])


KWOK_RENEW_WINDOW_S = 12.0  # kwok renews every quarter of the 40 s lease duration, plus jitter
FAULT_HOLDER = "outpost-sandbox-fault"


def node_lease_stale_apply(ctx: Ctx) -> dict[str, Any]:
    """Stop the renewal of one node's Lease, as when its kubelet dies.

    kwok renews a node Lease only while it holds it, and treats a node whose Lease another holder
    holds (unexpired) as not its own: it stops renewing it and stops playing its stages. So the
    fault takes the Lease over for a foreign holder with a long leaseDurationSeconds, renewing it
    one last time. From then on nobody renews it: it is stale against kwok's 40 s duration after
    40 s, and after node-monitor-grace-period the real node lifecycle controller turns the node
    NotReady (Unknown). The renewTime is deliberately not backdated: the lifecycle controller only
    acts once the live Lease is exactly the one it last saw renewed.
    """
    node = _node_target(ctx)
    path = object_path("Lease", node, "kube-node-lease")
    spec = ctx.kube.get(path)["spec"]
    last = _ts(_now(), micro=True)
    ctx.kube.merge_patch(path, {"spec": {"holderIdentity": FAULT_HOLDER, "leaseDurationSeconds": 86400,
                                         "renewTime": last}})
    undo = {"node": node, "holder": spec.get("holderIdentity"),
            "duration": spec.get("leaseDurationSeconds", 40)}
    # Proof, not hope: a whole kwok renew window must pass with our last renewal untouched.
    time.sleep(KWOK_RENEW_WINDOW_S)
    now_spec = ctx.kube.get(path)["spec"]
    if now_spec.get("renewTime") != last or now_spec.get("holderIdentity") != FAULT_HOLDER:
        _lease_restore(ctx, undo)
        raise FaultError(f"lease kube-node-lease/{node}: still renewed by {now_spec.get('holderIdentity')}")
    return undo


def _lease_restore(ctx: Ctx, undo: dict[str, Any]) -> None:
    # Released (no holder), not handed back: kwok re-plays a node's stages (Ready again) only
    # when it *acquires* the lease, not when it finds itself already holding it.
    ctx.kube.merge_patch(object_path("Lease", undo["node"], "kube-node-lease"), {"spec": {
        "holderIdentity": None, "leaseDurationSeconds": undo["duration"]}})


def node_lease_stale_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    node = undo["node"]
    _lease_restore(ctx, undo)

    def renewed() -> bool:
        spec = ctx.kube.get(object_path("Lease", node, "kube-node-lease"))["spec"]
        return bool(spec.get("holderIdentity")) and _age(spec.get("renewTime")) < 40

    _wait(f"kwok holding and renewing lease kube-node-lease/{node} again", 60, renewed)
    _restore_systems(ctx)


def _restore_systems(ctx: Ctx, timeout: float = 180) -> None:
    """After an outage: replace pods the node lifecycle controller left NotReady, wait for ready.

    Repeated, because the lifecycle controller may still see a node as not ready for a moment
    after it is back and mark the fresh replacement pods NotReady too.
    """
    _wait("every node Ready", 90, lambda: all(_node_ready(ctx, n) for n in _nodes(ctx)))
    last_error: list[systems.SystemsError] = []

    def revived_and_ready() -> bool:
        systems.revive_pods(ctx.kube)
        try:
            systems.wait_ready(ctx.kube, timeout=15)
        except systems.SystemsError as exc:
            last_error[:] = [exc]
            return False
        return True

    poll_until("systems ready after heal", timeout, revived_and_ready, interval=0,
               fail=lambda _message: FaultError(f"systems not ready after heal: {last_error[-1]}"))


# ---- Koordinator objects -------------------------------------------------------------------------
def nodemetric_stale_apply(ctx: Ctx) -> dict[str, Any]:
    node = _node_target(ctx)
    data = read_behaviour(ctx.sdir)
    data["stale_nodemetrics"] = sorted(set(data.get("stale_nodemetrics") or []) | {node})
    write_behaviour(ctx.sdir, data)
    time.sleep(0.5)  # let a refresh already in flight finish before we backdate
    ctx.kube.apply({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                    "metadata": {"name": node},
                    "status": {"updateTime": _ts(_now() - dt.timedelta(seconds=600))}}, "status")
    return {"node": node}


def _nodemetric_age(ctx: Ctx, node: str) -> float:
    nm = ctx.kube.get(f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{node}")
    return _age(nm["status"]["updateTime"])


def nodemetric_stale_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    node = undo["node"]
    data = read_behaviour(ctx.sdir)
    data["stale_nodemetrics"] = [n for n in data.get("stale_nodemetrics") or [] if n != node]
    write_behaviour(ctx.sdir, data)
    _wait(f"nodemetric {node} refreshed", 30, lambda: _nodemetric_age(ctx, node) < 60)


def _nodemetrics_report(ctx: Ctx, ratio: float) -> bool:
    """True once every node's NodeMetric reports the usage the daemon derives from `ratio`."""
    stale = set(read_behaviour(ctx.sdir).get("stale_nodemetrics") or [])
    nodes = {n["metadata"]["name"]: n for n in ctx.kube.get("/api/v1/nodes")["items"]}
    metrics = {m["metadata"]["name"]: m for m in ctx.kube.get("/apis/slo.koordinator.sh/v1alpha1/nodemetrics")["items"]}
    for name, node in nodes.items():
        if name in stale:
            continue
        want = f"{cpu_usage_millis(str(node['status'].get('allocatable', {}).get('cpu', '1')), ratio)}m"
        usage = (((metrics.get(name) or {}).get("status") or {}).get("nodeMetric") or {}).get("nodeUsage") or {}
        if (usage.get("resources") or {}).get("cpu") != want:
            return False
    return True


def _utilization(ratio: float) -> tuple[Apply, Heal]:
    def set_ratio(ctx: Ctx, value: float) -> None:
        data = read_behaviour(ctx.sdir)
        data["cpu_ratio"] = value
        write_behaviour(ctx.sdir, data)
        _wait(f"every NodeMetric reporting {value:.0%} CPU", 60, lambda: _nodemetrics_report(ctx, value))

    def apply(ctx: Ctx) -> dict[str, Any]:
        set_ratio(ctx, ratio)
        return {}

    def heal(ctx: Ctx, undo: dict[str, Any]) -> None:
        set_ratio(ctx, DEFAULT_CPU_RATIO)

    return apply, heal


def _podgroup(phase: str) -> tuple[Apply, Heal]:
    name = f"{FAULT_PREFIX}-{phase.lower()}-gang"

    def apply(ctx: Ctx) -> dict[str, Any]:
        k = ctx.kube
        k.apply({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": "default"},
                 "spec": {"minMember": 3, "scheduleTimeoutSeconds": 60}})
        start = _ts(_now() - dt.timedelta(hours=1))
        if phase == "Pending":
            # The gang's members really cannot schedule: they ask for a node that does not exist.
            k.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": name, "namespace": "default"},
                     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                              "template": {"metadata": {"labels": {
                                  "app": name, "pod-group.scheduling.sigs.k8s.io": name,
                                  "koordinator.sh/qosClass": "BE"}},
                                  "spec": {"nodeSelector": {"outpost.sandbox/no-such-node": "true"},
                                           "containers": [{"name": "w", "image": "library/busybox:1.36"}]}}}})
            systems.set_podgroup_phase(k, "default", name, "Pending", schedule_start=start)
        else:
            k.apply({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "default"},
                     "status": {"phase": "Failed", "failed": 3, "scheduleStartTime": start}}, "status")
        return {"name": name}

    def heal(ctx: Ctx, undo: dict[str, Any]) -> None:
        ctx.kube.delete(object_path("Deployment", undo["name"], "default"))
        ctx.kube.delete(object_path("PodGroup", undo["name"], "default"))

    return apply, heal


def evictions_apply(ctx: Ctx) -> dict[str, Any]:
    count = int(ctx.options.get("count") or 10)
    pods = ctx.kube.get("/api/v1/namespaces/default/pods", labelSelector="koordinator.sh/qosClass=BE,app=be-batch")
    if not pods["items"]:
        raise FaultError("deployment default/be-batch has no pods to attribute evictions to")
    names = []
    now = _now()
    for i in range(count):
        pod = pods["items"][i % len(pods["items"])]
        meta = pod["metadata"]
        name = f"{FAULT_PREFIX}-evict-{secrets.token_hex(4)}"
        ctx.kube.request("POST", "/api/v1/namespaces/default/events", json_body={
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": meta["namespace"],
                               "name": meta["name"], "uid": meta["uid"]},
            "type": "Warning", "reason": "evictPodSuccess",
            "message": f"evict Pod:{meta['namespace']}/{meta['name']}, reason: evictPodByBECPUSatisfaction, "
                       "message: BE pods suppressed for LS latency",
            "source": {"component": "koordlet", "host": pod["spec"].get("nodeName", "")},
            "reportingComponent": "koordlet", "reportingInstance": pod["spec"].get("nodeName", ""),
            "firstTimestamp": _ts(now), "lastTimestamp": _ts(now), "count": 1})
        names.append(name)
    return {"events": names}


def evictions_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    for name in undo["events"]:
        ctx.kube.delete(object_path("Event", name, "default"))


def _manifest_docs(ctx: Ctx) -> list[dict[str, Any]]:
    return systems.load_manifests(systems.template_values(ctx.sdir))


def webhook_deleted_apply(ctx: Ctx) -> dict[str, Any]:
    system = _need(ctx, sorted(WEBHOOK_CONFIGS), "system")
    mut, val = WEBHOOK_CONFIGS[system]
    ctx.kube.delete(object_path("MutatingWebhookConfiguration", mut))
    ctx.kube.delete(object_path("ValidatingWebhookConfiguration", val))
    return {"system": system}


def webhook_deleted_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    names = set(WEBHOOK_CONFIGS[undo["system"]])
    for doc in _manifest_docs(ctx):
        if doc["metadata"]["name"] in names:
            ctx.kube.apply(doc)


def scaled_to_zero_apply(ctx: Ctx) -> dict[str, Any]:
    name = _need(ctx, sorted(MANAGERS), "deployment")
    ns = MANAGERS[name]
    ctx.kube.merge_patch(object_path("Deployment", name, ns), {"spec": {"replicas": 0}})
    _wait(f"deployment {ns}/{name} to have no pods", 60, lambda: not ctx.kube.get(
        f"/api/v1/namespaces/{ns}/pods",
        labelSelector="koord-app=koord-manager" if name == "koord-manager"
        else "control-plane=controller-manager")["items"])
    return {"name": name}


def scaled_to_zero_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    name = undo["name"]
    ns = MANAGERS[name]
    ctx.kube.merge_patch(object_path("Deployment", name, ns),
                         {"spec": {"replicas": systems.DEFAULT_REPLICAS[name]}})
    _wait(f"deployment {ns}/{name} ready", 90, lambda: systems.deployment_ready(ctx.kube, ns, name))


def leader_lease_apply(ctx: Ctx) -> dict[str, Any]:
    name = _need(ctx, sorted(LEADER_LEASES), "leader lease")
    data = read_behaviour(ctx.sdir)
    data["stale_leases"] = sorted(set(data.get("stale_leases") or []) | {name})
    write_behaviour(ctx.sdir, data)
    time.sleep(0.5)
    ctx.kube.merge_patch(object_path("Lease", name, LEADER_LEASES[name]),
                         {"spec": {"renewTime": _ts(_now() - dt.timedelta(seconds=120), micro=True)}})
    return {"name": name}


def leader_lease_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    name = undo["name"]
    data = read_behaviour(ctx.sdir)
    data["stale_leases"] = [n for n in data.get("stale_leases") or [] if n != name]
    write_behaviour(ctx.sdir, data)

    def fresh() -> bool:
        lease = ctx.kube.get(object_path("Lease", name, LEADER_LEASES[name]))
        return _age(lease["spec"]["renewTime"]) < 15

    _wait(f"lease {LEADER_LEASES[name]}/{name} renewed", 30, fresh)


# ---- API server overload (Priority and Fairness) ------------------------------------------------
def _subject(spec: str) -> dict[str, Any]:
    kind, _, name = spec.partition(":")
    if kind == "user" and name:
        return {"kind": "User", "user": {"name": name}}
    if kind == "group" and name:
        return {"kind": "Group", "group": {"name": name}}
    if kind == "sa" and "/" in name:
        ns, _, sa = name.partition("/")
        return {"kind": "ServiceAccount", "serviceAccount": {"namespace": ns, "name": sa}}
    raise FaultError(f"--target {spec!r}: expected user:NAME, group:NAME or sa:NAMESPACE/NAME")


def overload_apply(ctx: Ctx) -> dict[str, Any]:
    spec = ctx.target or DEFAULT_PROBE_SUBJECT
    subject = _subject(spec)
    k = ctx.kube
    # Zero nominal seats and no borrowing: the level runs one request only while nothing else
    # of it executes; the daemon's load keeps that one seat busy, so every other request is
    # rejected with 429 at once. Health endpoints stay exempt (/readyz 200), as on a real cluster.
    k.apply({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
             "metadata": {"name": APF_NAME},
             "spec": {"type": "Limited", "limited": {
                 "nominalConcurrencyShares": 0, "lendablePercent": 0, "borrowingLimitPercent": 0,
                 "limitResponse": {"type": "Reject"}}}})
    k.apply({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
             "metadata": {"name": APF_NAME},
             "spec": {"matchingPrecedence": 10, "priorityLevelConfiguration": {"name": APF_NAME},
                      "distinguisherMethod": {"type": "ByUser"},
                      "rules": [{"subjects": [subject, {"kind": "User", "user": {"name": APF_LOAD_USER}}],
                                 "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                    "namespaces": ["*"], "clusterScope": True}]}]}})
    data = read_behaviour(ctx.sdir)
    data["apf_load"] = {"user": APF_LOAD_USER}
    write_behaviour(ctx.sdir, data)
    headers = _impersonation(subject)

    def rejected() -> bool:
        codes = [k.raw_with("/api/v1/namespaces/default/pods?limit=1", headers) for _ in range(3)]
        return all(c == 429 for c in codes)

    _wait(f"429 for {spec}'s LIST", 30, rejected)
    return {"subject": spec}


def _impersonation(subject: dict[str, Any]) -> dict[str, str]:
    if subject["kind"] == "User":
        return {"Impersonate-User": subject["user"]["name"]}
    if subject["kind"] == "Group":
        return {"Impersonate-User": "outpost-sandbox:overload-check", "Impersonate-Group": subject["group"]["name"]}
    sa = subject["serviceAccount"]
    return {"Impersonate-User": f"system:serviceaccount:{sa['namespace']}:{sa['name']}"}


def overload_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    data = read_behaviour(ctx.sdir)
    data["apf_load"] = None
    write_behaviour(ctx.sdir, data)
    ctx.kube.delete(object_path("FlowSchema", APF_NAME))
    ctx.kube.delete(object_path("PriorityLevelConfiguration", APF_NAME))
    headers = _impersonation(_subject(undo["subject"]))
    _wait("LIST no longer rejected with 429", 30,
          lambda: ctx.kube.raw_with("/api/v1/namespaces/default/pods?limit=1", headers) != 429)


# ---- certificates ----------------------------------------------------------------------------------
def _republish_webhook_pki(ctx: Ctx) -> None:
    for doc in _manifest_docs(ctx):
        if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret"):
            ctx.kube.apply(doc)


def webhook_cert_expiring_apply(ctx: Ctx) -> dict[str, Any]:
    days = float(ctx.options.get("days") or 5)
    pdir = ctx.sdir / "pki"
    t = pki.now()
    ca = pki.make_ca("outpost-sandbox-ca-short", t - dt.timedelta(hours=1), t + dt.timedelta(days=days))
    pki.write_pair(pdir, "ca-short", ca)
    certs = {}
    for target, (svc, ns) in systems.WEBHOOK_SERVICES.items():
        pair = pki.issue_serving(ca, pki.service_names(svc, ns), t - dt.timedelta(hours=1),
                                 t + dt.timedelta(days=days))
        pki.write_pair(pdir, f"{svc}-short", pair)
        certs[target] = f"{svc}-short"
    # the short pair becomes what install publishes (template_values reads the active CA/cert)
    for svc, _ns in systems.WEBHOOK_SERVICES.values():
        normal = pki.read_pair(pdir, svc)
        assert normal is not None
        pki.write_pair(pdir, f"{svc}-long", normal)
        short = pki.read_pair(pdir, f"{svc}-short")
        assert short is not None
        pki.write_pair(pdir, svc, short)
    (pdir / "active-ca").write_text("ca-short")
    _republish_webhook_pki(ctx)
    return {"days": days}


def webhook_cert_expiring_heal(ctx: Ctx, undo: dict[str, Any]) -> None:
    pdir = ctx.sdir / "pki"
    for svc, _ns in systems.WEBHOOK_SERVICES.values():
        long = pki.read_pair(pdir, f"{svc}-long")
        if long is not None:
            pki.write_pair(pdir, svc, long)
    (pdir / "active-ca").unlink(missing_ok=True)
    _republish_webhook_pki(ctx)


def _cluster() -> Any:
    from outpost_sandbox import cluster  # the launcher; imported late so faults load without it

    return cluster


def _apiserver_cert(days: float) -> tuple[Apply, Heal]:
    def apply(ctx: Ctx) -> dict[str, Any]:
        not_after = _now() + dt.timedelta(days=days)
        not_before = not_after - dt.timedelta(days=90) if days < 0 else None
        _cluster().rotate_apiserver_cert(not_after=not_after, state_dir=ctx.state_dir, not_before=not_before)
        return {}

    def heal(ctx: Ctx, undo: dict[str, Any]) -> None:
        _cluster().rotate_apiserver_cert(not_after=None, state_dir=ctx.state_dir)

    return apply, heal


def _component_down(component: str) -> tuple[Apply, Heal]:
    def apply(ctx: Ctx) -> dict[str, Any]:
        if not _cluster().stop_component(component, state_dir=ctx.state_dir):
            raise FaultError(f"sandbox component {component} was not running")
        return {}

    def heal(ctx: Ctx, undo: dict[str, Any]) -> None:
        # Returns once the component works again (kwok: every node Lease renewed), and after etcd
        # or the API server, once /readyz is 200 and the watching components are restarted.
        _cluster().start_component(component, state_dir=ctx.state_dir, wait=True)
        _restore_systems(ctx)

    return apply, heal


def _fault(name: str, checks: tuple[str, ...], help_: str, pair: tuple[Apply, Heal],
           target_help: str = "") -> Fault:
    return Fault(name, checks, help_, pair[0], pair[1], target_help)


_BT = "backend target: " + ", ".join(sorted(TARGETS))
FAULTS: dict[str, Fault] = {f.name: f for f in [
    _fault("backend-down", ("koord-manager-health", "koord-webhook", "kruise-manager-health", "kruise-webhook",
                            "admission-dry-run", "kruise-daemon-coverage", "ls-latency"),
           "the backend resets connections", _backend("down"), _BT),
    _fault("backend-500", ("koord-manager-health", "koord-webhook", "kruise-manager-health", "kruise-webhook",
                           "admission-dry-run", "kruise-daemon-coverage", "ls-latency"),
           "the backend answers 500", _backend("500"), _BT),
    _fault("backend-hang", ("koord-manager-health", "koord-webhook", "kruise-manager-health", "kruise-webhook",
                            "admission-dry-run", "kruise-daemon-coverage", "ls-latency"),
           "the backend accepts and never answers", _backend("hang"), _BT),
    _fault("backend-slow", ("ls-latency", "koord-manager-health", "kruise-manager-health"),
           "the backend answers after --delay-ms (default 3000)",
           _backend("slow"), _BT),
    _fault("backend-wrong-body", ("kruise-manager-health", "koord-manager-health", "admission-dry-run"),
           "the backend answers 200 with a wrong body",
           _backend("wrong-body"), _BT),
    _fault("backend-tls-bad-ca", ("admission-dry-run",),
           "the webhook serves a certificate from a foreign CA", _backend("tls-bad-ca", TLS_TARGETS),
           "koord-webhook or kruise-webhook"),
    _fault("backend-tls-expired", ("admission-dry-run",),
           "the webhook serves an expired certificate", _backend("tls-expired", TLS_TARGETS),
           "koord-webhook or kruise-webhook"),
    _fault("webhook-no-mutate", ("admission-dry-run",), "the webhook allows without mutating",
           _backend("no-mutate", TLS_TARGETS), "koord-webhook or kruise-webhook"),
    _fault("koordlet-missing", ("koordlet-coverage",), "the koordlet DaemonSet leaves one node",
           _ds_missing(NO_KOORDLET_LABEL, "koordinator-system", "koordlet"), "node (default: first)"),
    _fault("kruise-daemon-missing", ("kruise-daemon-coverage",), "the kruise-daemon DaemonSet leaves one node",
           _ds_missing(NO_KRUISE_DAEMON_LABEL, "kruise-system", "kruise-daemon"), "node (default: first)"),
    _fault("node-lease-stale", ("kwok-node-consistency",),
           "one node's Lease stops being renewed (kwok lets go of it), then the node turns NotReady",
           (node_lease_stale_apply, node_lease_stale_heal), "node (default: first)"),
    _fault("nodemetric-stale", ("nodemetric-freshness",), "one node's NodeMetric stops being refreshed",
           (nodemetric_stale_apply, nodemetric_stale_heal), "node (default: first)"),
    _fault("node-utilization-low", ("node-utilization",), "NodeMetrics report 20 % CPU",
           _utilization(0.20)),
    _fault("node-utilization-high", ("node-utilization",), "NodeMetrics report 90 % CPU",
           _utilization(0.90)),
    _fault("podgroup-failed", ("gang-scheduling",), "a PodGroup in phase Failed", _podgroup("Failed")),
    _fault("podgroup-stuck", ("gang-scheduling",), "a PodGroup Pending for an hour, members unschedulable",
           _podgroup("Pending")),
    _fault("be-evictions", ("be-eviction-rate",), "--count (default 10) evictPodSuccess Events on BE pods",
           (evictions_apply, evictions_heal)),
    _fault("webhook-config-deleted", ("koord-webhook", "admission-dry-run"),
           "the system's mutating and validating webhook configurations are deleted",
           (webhook_deleted_apply, webhook_deleted_heal), "koordinator or kruise"),
    _fault("manager-scaled-to-zero", ("koord-manager-health", "kruise-manager-replicas", "leader-leases"),
           "the manager Deployment is scaled to 0", (scaled_to_zero_apply, scaled_to_zero_heal),
           "koord-manager or kruise-controller-manager"),
    _fault("leader-lease-stale", ("leader-leases",), "a leader Lease is no longer renewed",
           (leader_lease_apply, leader_lease_heal), "lease: " + ", ".join(sorted(LEADER_LEASES))),
    _fault("apiserver-overload", ("apiserver-triage",),
           "Priority and Fairness rejects the subject's requests with 429 while /readyz stays 200",
           (overload_apply, overload_heal), f"user:NAME, group:NAME or sa:NS/NAME (default {DEFAULT_PROBE_SUBJECT})"),
    _fault("webhook-cert-expiring", ("webhook-cert-expiry",),
           "webhook CA (caBundle) and serving certificates expire in --days (default 5)",
           (webhook_cert_expiring_apply, webhook_cert_expiring_heal)),
    _fault("apiserver-cert-expiring", ("apiserver-cert-expiry",), "API server certificate expires in 5 days",
           _apiserver_cert(5)),
    _fault("apiserver-cert-expired", ("apiserver-cert-expiry", "apiserver-triage"),
           "API server certificate expired a day ago", _apiserver_cert(-1)),
    _fault("etcd-down", ("apiserver-health", "apiserver-triage"), "etcd is stopped", _component_down("etcd")),
    _fault("apiserver-down", ("apiserver-health", "apiserver-triage"), "kube-apiserver is stopped",
           _component_down("kube-apiserver")),
    _fault("kwok-down", ("kwok-node-consistency",), "kwok is stopped: no node Lease is renewed",
           _component_down("kwok")),
]}


# ---- records and the Python API -----------------------------------------------------------------------
def _records_path(state_dir: Path) -> Path:
    return systems.systems_dir(state_dir) / "faults.json"


def active(state_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """The active faults, oldest first: [{"fault", "target", "undo"}]."""
    path = _records_path(_state(state_dir))
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    if not isinstance(data, list):
        raise FaultError(f"fault records {path}: not a list")
    return data


def _save(state_dir: Path, records: list[dict[str, Any]]) -> None:
    path = _records_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(records, indent=2))
    tmp.replace(path)


def _state(state_dir: Path | str | None) -> Path:
    if state_dir is not None:
        return Path(state_dir)
    return Path(_cluster().default_state_dir())


def break_fault(name: str, target: str | None = None, state_dir: Path | str | None = None,
                **options: Any) -> dict[str, Any]:
    """Inject fault `name` (see FAULTS); returns its record. Idempotent for the same name+target."""
    fault = FAULTS.get(name)
    if fault is None:
        raise FaultError(f"fault {name!r}: unknown (known: {', '.join(sorted(FAULTS))})")
    sd = _state(state_dir)
    records = active(sd)
    for rec in records:
        if rec["fault"] == name and rec["target"] == target:
            return rec
    ctx = Ctx(sd, target, options)
    try:
        undo = fault.apply(ctx)
    except SandboxApiError as exc:
        raise FaultError(f"fault {name}: {exc}") from None
    finally:
        ctx.close()
    rec = {"fault": name, "target": target, "undo": undo}
    _save(sd, [*records, rec])
    return rec


def heal(name: str | None = None, target: str | None = None, state_dir: Path | str | None = None) -> list[str]:
    """Undo active faults (all, or those named / with that target), newest first; returns what was healed."""
    sd = _state(state_dir)
    records = active(sd)
    healed: list[str] = []
    for rec in reversed(list(records)):
        if (name and rec["fault"] != name) or (target and rec["target"] != target):
            continue
        ctx = Ctx(sd, rec["target"])
        try:
            FAULTS[rec["fault"]].heal(ctx, rec["undo"])
        except SandboxApiError as exc:
            raise FaultError(f"heal {rec['fault']}: {exc}") from None
        finally:
            ctx.close()
        records.remove(rec)
        _save(sd, records)
        healed.append(f"{rec['fault']}" + (f" ({rec['target']})" if rec["target"] else ""))
    return healed


# ---- command line ------------------------------------------------------------------------------------
def register(sandbox_subparsers: Any) -> None:
    """Add `break` and `heal` to the `outpost sandbox` subparsers (each sets func(args) -> int)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--state-dir", default=None,
                        help="sandbox state directory (default $OUTPOST_SANDBOX_DIR or ~/.outpost/sandbox)")
    listing = "\n".join(f"  {f.name:<24} {f.help}" + (f" [--target {f.target_help}]" if f.target_help else "")
                        for f in FAULTS.values())
    p_break = sandbox_subparsers.add_parser(
        "break", parents=[common], help="inject a fault", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=f"Inject a fault into the running sandbox.\n\nfaults:\n{listing}")
    p_break.add_argument("fault", choices=sorted(FAULTS), metavar="FAULT")
    p_break.add_argument("--target", default=None, help="what the fault applies to (see the list)")
    p_break.add_argument("--delay-ms", type=int, default=None, help="backend-slow: delay (default 3000)")
    p_break.add_argument("--count", type=int, default=None, help="be-evictions: number of events (default 10)")
    p_break.add_argument("--days", type=float, default=None, help="webhook-cert-expiring: validity (default 5)")
    p_break.set_defaults(func=_cmd_break)
    p_heal = sandbox_subparsers.add_parser("heal", parents=[common], help="undo injected faults (all by default)")
    p_heal.add_argument("fault", nargs="?", default=None, metavar="FAULT")
    p_heal.add_argument("--target", default=None)
    p_heal.set_defaults(func=_cmd_heal)


def _cmd_break(args: argparse.Namespace) -> int:
    try:
        rec = break_fault(args.fault, args.target, args.state_dir, delay_ms=args.delay_ms,
                          count=args.count, days=args.days)
    except (OutpostError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    checks = set(FAULTS[args.fault].checks)
    if rec["target"] in TARGET_CHECKS:  # a backend fault fails only the checks of that backend
        checks &= set(TARGET_CHECKS[rec["target"]])
    print(f"broken: {args.fault}" + (f" ({rec['target']})" if rec["target"] else "")
          + f" - should fail: {', '.join(sorted(checks)) or 'no catalogue check (metrics only)'}")
    return 0


def _cmd_heal(args: argparse.Namespace) -> int:
    try:
        healed = heal(args.fault, args.target, args.state_dir)
    except (OutpostError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"healed: {', '.join(healed)}" if healed else "healed: nothing was broken")
    return 0
