"""Faults of the real managers (kruise-manager, koord-manager, koord-scheduler, koord-descheduler).

Done for real: down (killed, held in CrashLoopBackOff), frozen (SIGSTOP), Lease stolen, webhook certificates
expiring or deleted while the manager is down, since a running one replaces any certificate expiring within 6
months (kruise@v1.8.0 and koordinator@v1.6.0 `pkg/webhook/util/writer/certwriter.go`) and restores a corrupted
caBundle within a second. Apply returns once every check the catalogue names can see the fault; heal once the
manager is ready, leading and mutating again (`systems.wait_managers`).
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from outpost.kube.paths import LEASES, MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS, object_path
from outpost_sandbox import pki, systems
from outpost_sandbox.faults.base import (
    Apply,
    FaultContext,
    FaultError,
    Heal,
    age_seconds,
    hold_on_process_node,
    pod_process_state,
    pod_ready,
    required_target,
    rfc3339,
    utc_now,
    wait_for,
)

LEASE_SLACK_S = 10.0
"""leader-leases' default slack past leaseDurationSeconds: a killed or frozen manager is observable once past it."""
THIEF = "outpost-fault-thief"
LEADER_LEASES = {lease: (manager, ns) for manager, (ns, _selector, lease) in systems.MANAGERS.items()}
"""Each manager's leader Lease: its name -> (the manager Deployment, the namespace)."""
SYSTEM_MANAGER = {"kruise": "kruise-controller-manager", "koordinator": "koord-manager"}
CERT_SECRET = {
    "kruise": ("kruise-system", "kruise-webhook-certs"),
    "koordinator": ("koordinator-system", "koordinator-webhook-certs"),
}
CERT_SERVICE = {
    "kruise": ("kruise-system", "kruise-webhook-service"),
    "koordinator": ("koordinator-system", "koordinator-webhook-service"),
}
WEBHOOK_CONFIGS = {
    "koordinator": ("koordinator-mutating-webhook-configuration", "koordinator-validating-webhook-configuration"),
    "kruise": ("kruise-mutating-webhook-configuration", "kruise-validating-webhook-configuration"),
}


def manager_target(ctx: FaultContext) -> str:
    return required_target(ctx, sorted(systems.MANAGERS), "manager deployment")


def _hold(ctx: FaultContext, kind: str, manager: str, on: bool) -> None:
    """Add (or remove) `manager`'s pods to the process node's `kind` list (crashloop, frozen)."""
    ns, selector, _lease = systems.MANAGERS[manager]
    hold_on_process_node(ctx, kind, ns, selector, on)


def _pods(ctx: FaultContext, manager: str) -> list[dict[str, Any]]:
    ns, selector, _lease = systems.MANAGERS[manager]
    return list(ctx.kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)["items"])


def _lease_expired(ctx: FaultContext, manager: str) -> bool:
    ns, _selector, lease = systems.MANAGERS[manager]
    found = ctx.kube.get(object_path(LEASES, lease, ns), ok_missing=True)
    spec = (found or {}).get("spec") or {}
    return age_seconds(spec.get("renewTime")) > float(spec.get("leaseDurationSeconds") or 0) + LEASE_SLACK_S


def _lease_timeout(ctx: FaultContext, manager: str) -> float:
    ns, _selector, lease = systems.MANAGERS[manager]
    found = ctx.kube.get(object_path(LEASES, lease, ns), ok_missing=True)
    return float(((found or {}).get("spec") or {}).get("leaseDurationSeconds") or 15) + LEASE_SLACK_S + 30


def hold_down(ctx: FaultContext, manager: str) -> None:
    """Kill `manager`'s processes and keep them down; returns once no process of it runs, every pod is NotReady
    and its leader Lease reads as expired.

    Time is compressed, as for koordlet's report: once no process is left to renew the Lease, its renewTime is
    moved back past leaseDurationSeconds and leader-leases' slack, which is what the Lease says that much later.
    Only renewTime moves (holder and duration stay). A restarted candidate is not hurried by it: client-go's
    leader election counts a lease's validity from when the candidate itself last saw the record change, never
    from renewTime (`observedTime` in tools/leaderelection/leaderelection.go of k8s.io/client-go@v0.28.7, which
    koordinator@v1.6.0 pins, and of @v0.30.10, which kruise@v1.8.0 pins), so the heal still waits a whole
    leaseDurationSeconds, as after a real outage."""
    _hold(ctx, "crashloop", manager, True)
    wait_for(
        f"no process of {manager} left and every pod NotReady",
        30,
        lambda: all(not pod_ready(p) and not pod_process_state(ctx.state_dir, p) for p in _pods(ctx, manager)),
    )
    _backdate_lease(ctx, manager)
    if not _lease_expired(ctx, manager):
        raise FaultError(f"the leader Lease of {manager} was renewed after every process of {manager} stopped")


def _backdate_lease(ctx: FaultContext, manager: str) -> None:
    ns, _selector, lease = systems.MANAGERS[manager]
    path = object_path(LEASES, lease, ns)
    spec = ctx.kube.get(path).get("spec") or {}
    stale_by = float(spec.get("leaseDurationSeconds") or 15) + LEASE_SLACK_S + 5
    if age_seconds(spec.get("renewTime")) < stale_by:
        renewed = utc_now() - dt.timedelta(seconds=stale_by)
        ctx.kube.merge_patch(path, {"spec": {"renewTime": rfc3339(renewed, micro=True)}})


def release(ctx: FaultContext, manager: str, timeout: float = 180) -> None:
    _hold(ctx, "crashloop", manager, False)
    _hold(ctx, "frozen", manager, False)
    with systems_kube(ctx) as kube:
        systems.wait_managers(kube, timeout)


def release_held(ctx: FaultContext, undo: dict[str, Any]) -> None:
    """The heal of a fault whose apply held one manager down or frozen (`undo["manager"]`)."""
    release(ctx, undo["manager"])


def systems_kube(ctx: FaultContext) -> Any:
    return ctx.kube.impersonating({}, timeout=30)


def down_fault() -> tuple[Apply, Heal]:
    def apply(ctx: FaultContext) -> dict[str, Any]:
        manager = manager_target(ctx)
        hold_down(ctx, manager)
        return {"manager": manager}

    return apply, release_held


def frozen_fault() -> tuple[Apply, Heal]:
    def apply(ctx: FaultContext) -> dict[str, Any]:
        manager = required_target(ctx, sorted(SYSTEM_MANAGER.values()), "manager deployment")
        _hold(ctx, "frozen", manager, True)
        # The kubelet's readiness probe needs failureThreshold x periodSeconds (3 x 10 s by default) to give up.
        wait_for(
            f"every pod of {manager} NotReady (readiness probe failing)",
            60,
            lambda: not any(pod_ready(p) for p in _pods(ctx, manager)),
        )
        wait_for(
            f"the leader Lease of {manager} expired", _lease_timeout(ctx, manager), lambda: _lease_expired(ctx, manager)
        )
        return {"manager": manager}

    return apply, release_held


def lease_stolen_fault() -> tuple[Apply, Heal]:
    def apply(ctx: FaultContext) -> dict[str, Any]:
        lease = required_target(ctx, sorted(LEADER_LEASES), "leader lease")
        _manager, ns = LEADER_LEASES[lease]
        now = rfc3339(utc_now(), micro=True)
        held = ctx.kube.get(object_path(LEASES, lease, ns))
        transitions = int((held.get("spec") or {}).get("leaseTransitions") or 0) + 1  # as client-go counts a take-over
        ctx.kube.merge_patch(
            object_path(LEASES, lease, ns),
            {
                "spec": {
                    "holderIdentity": THIEF,
                    "leaseDurationSeconds": 3600,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": transitions,
                }
            },
        )
        return {"lease": lease}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        _manager, ns = LEADER_LEASES[undo["lease"]]
        ctx.kube.delete(object_path(LEASES, undo["lease"], ns))
        with systems_kube(ctx) as kube:
            systems.wait_managers(kube, 120)

    return apply, heal


# ---- webhook certificates ------------------------------------------------------------------------
def _system_target(ctx: FaultContext) -> str:
    return required_target(ctx, sorted(SYSTEM_MANAGER), "system")


def _secret(ctx: FaultContext, system: str) -> dict[str, Any] | None:
    ns, name = CERT_SECRET[system]
    found: dict[str, Any] | None = ctx.kube.get(object_path(SECRETS, name, ns), ok_missing=True)
    return found


def _publish_ca(ctx: FaultContext, system: str, ca_pem: bytes) -> None:
    """Every webhook of the system's two configurations trusts `ca_pem` (as the manager's Ensure would write it)."""
    bundle = base64.b64encode(ca_pem).decode()
    for kind, name in zip((MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS), WEBHOOK_CONFIGS[system], strict=True):
        path = object_path(kind, name)
        config = ctx.kube.get(path)
        for webhook in config.get("webhooks") or []:
            webhook.setdefault("clientConfig", {})["caBundle"] = bundle
        ctx.kube.replace(path, config)


def cert_expiring_fault(days: float = 5) -> tuple[Apply, Heal]:
    def apply(ctx: FaultContext) -> dict[str, Any]:
        system = _system_target(ctx)
        manager = SYSTEM_MANAGER[system]
        hold_down(ctx, manager)
        when = float(ctx.options.get("days") or days)
        t = pki.now()
        ca = pki.make_ca(f"outpost-fault-{system}-webhook-ca", t - dt.timedelta(hours=1), t + dt.timedelta(days=when))
        ns, service = CERT_SERVICE[system]
        leaf = pki.issue_serving(
            ca, pki.service_names(service, ns), t - dt.timedelta(hours=1), t + dt.timedelta(days=when)
        )
        secret_ns, secret_name = CERT_SECRET[system]
        encoded = {
            key: base64.b64encode(value).decode()
            for key, value in (
                ("ca-cert.pem", ca.cert_pem),
                ("ca-key.pem", ca.key_pem),
                ("cert.pem", leaf.cert_pem),
                ("key.pem", leaf.key_pem),
                ("tls.crt", leaf.cert_pem),
                ("tls.key", leaf.key_pem),
            )
        }
        ctx.kube.merge_patch(object_path(SECRETS, secret_name, secret_ns), {"data": encoded})
        _publish_ca(ctx, system, ca.cert_pem)
        return {"system": system, "days": when}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        system = undo["system"]
        release(ctx, SYSTEM_MANAGER[system])
        wait_for(
            f"{system}'s manager to replace the expiring webhook certificate",
            60,
            lambda: _certificate_days_left(_secret(ctx, system)) > 30,
        )

    return apply, heal


def _certificate_days_left(secret: dict[str, Any] | None) -> float:
    from cryptography import x509

    value = ((secret or {}).get("data") or {}).get("cert.pem")
    if not value:
        return 0.0
    certificate = x509.load_pem_x509_certificate(base64.b64decode(value))
    return (certificate.not_valid_after_utc - utc_now()).total_seconds() / 86400


def certs_deleted_fault() -> tuple[Apply, Heal]:
    def apply(ctx: FaultContext) -> dict[str, Any]:
        system = _system_target(ctx)
        hold_down(ctx, SYSTEM_MANAGER[system])
        ns, name = CERT_SECRET[system]
        before = ((_secret(ctx, system) or {}).get("data") or {}).get("ca-cert.pem")
        ctx.kube.delete(object_path(SECRETS, name, ns))
        return {"system": system, "ca": before}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        system = undo["system"]
        ns, name = CERT_SECRET[system]
        if system == "kruise":
            # OpenKruise's install ships the Secret empty and the manager fills it (config/manager/manager.yaml);
            # Koordinator's manager creates its own.
            ctx.kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}})
        release(ctx, SYSTEM_MANAGER[system])
        secret = _secret(ctx, system)
        after = ((secret or {}).get("data") or {}).get("ca-cert.pem")
        if not after or after == undo.get("ca"):
            raise FaultError(f"secret {ns}/{name}: not regenerated with a new CA after heal")

    return apply, heal


def webhook_deleted_apply(ctx: FaultContext) -> dict[str, Any]:
    system = _system_target(ctx)
    mutating, validating = WEBHOOK_CONFIGS[system]
    ctx.kube.delete(object_path(MUTATING_WEBHOOKS, mutating))
    ctx.kube.delete(object_path(VALIDATING_WEBHOOKS, validating))
    return {"system": system}


def webhook_deleted_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    """Re-create both configurations as installed; the running manager fills their caBundle (its Ensure on add)."""
    names = set(WEBHOOK_CONFIGS[undo["system"]])
    for doc in systems.upstream_manifests(systems.installed_with(ctx.state_dir)):
        if doc["metadata"]["name"] in names:
            ctx.kube.apply(doc)
    with systems_kube(ctx) as kube:
        systems.wait_managers(kube, 120)
