"""The `webhooks` area of `python -m kit.capture`: what the webhook checks read, healthy and under each fault.

Writes `tests/unit/fixtures/webhooks/<state>/`, one directory per state (`healthy`, `<fault>@<target>`, and
`<fault>@koord-webhook+failurePolicy=Fail` with Koordinator's pod webhook switched to failurePolicy Fail):
- `objects/<Kind>.<name>.json`: the webhook Services, their EndpointSlices and Endpoints and the four webhook
  configurations, as the admin reads them (managedFields dropped). A fault's directory keeps only the objects
  that differ from `healthy`, and lists the ones it deleted in `deleted.json` (file names);
- `healthz.<service>.status|.body`: `/healthz` through the `https:` service proxy as the probe reads it
  (status `timeout` when no answer came within 5 s);
- `dry_run.<system>.status|.body`: the probe's `dryRun=All` pod create for each system of admission-dry-run.

Run as `python -m kit.capture webhooks [STATE...]` (`kit/capture.py`). With STATE labels, only those states are
captured again (the others are kept).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from outpost.checks.admission_dry_run import AdmissionDryRunParams, probe_pod
from outpost.cluster import Cluster, ClusterWriter, service_proxy
from outpost.config import ClusterSettings, KubeconfigAuth
from outpost.errors import ClusterTimeout
from outpost.kube import paths as kp
from outpost_sandbox import faults

OUT = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "webhooks"
SERVICES = {"koordinator-system": "koordinator-webhook-service", "kruise-system": "kruise-webhook-service"}
CONFIGURATIONS = [
    (kp.MUTATING_WEBHOOKS, "koordinator-mutating-webhook-configuration"),
    (kp.VALIDATING_WEBHOOKS, "koordinator-validating-webhook-configuration"),
    (kp.MUTATING_WEBHOOKS, "kruise-mutating-webhook-configuration"),
    (kp.VALIDATING_WEBHOOKS, "kruise-validating-webhook-configuration"),
]
_TARGETS: tuple[str, ...] = ("koord-webhook", "kruise-webhook")
_BACKEND_FAULTS = (
    "backend-down",
    "backend-500",
    "backend-hang",
    "backend-wrong-body",
    "backend-tls-bad-ca",
    "backend-tls-expired",
    "webhook-no-mutate",
)
STATES: list[tuple[str, str | None, bool]] = [("healthy", None, False)]
STATES += [(fault, target, False) for target in _TARGETS for fault in _BACKEND_FAULTS]
STATES += [("webhook-config-deleted", "koordinator", False), ("webhook-config-deleted", "kruise", False)]
# failurePolicy Fail on Koordinator's pod webhook: the API server refuses the create and names the webhook
STATES += [(fault, "koord-webhook", True) for fault in ("backend-down", "backend-hang", "backend-tls-bad-ca")]
KOORD_MUTATING = kp.object_path(kp.MUTATING_WEBHOOKS, "koordinator-mutating-webhook-configuration")


def failure_policy(admin: Cluster, policy: str) -> None:
    """Set the failurePolicy of Koordinator's pod mutating webhook (the first webhook of its configuration)."""
    assert isinstance(admin, ClusterWriter)
    configuration = admin.get_json(KOORD_MUTATING)
    configuration["webhooks"][0]["failurePolicy"] = policy
    admin.replace(KOORD_MUTATING, configuration)


def label_of(fault: str, target: str | None, fail: bool) -> str:
    return fault if target is None else f"{fault}@{target}" + ("+failurePolicy=Fail" if fail else "")


def trim(obj: dict[str, Any], kind: kp.Kind) -> dict[str, Any]:
    obj = {"kind": kind.kind, "apiVersion": kind.api_version, **obj}
    obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return obj


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def capture(admin: Cluster, probe: Cluster, out: Path) -> None:
    objects = out / "objects"
    for namespace, service in SERVICES.items():
        for kind, name in ((kp.SERVICES, service), (kp.ENDPOINTS, service)):
            raw = admin.get_object(kp.object_path(kind, name, namespace))
            if raw is not None:
                write(objects / f"{kind.kind}.{name}.json", json.dumps(trim(raw, kind), indent=1, sort_keys=True))
        for item in admin.list(
            kp.collection_path(kp.ENDPOINT_SLICES, namespace), label_selector=f"kubernetes.io/service-name={service}"
        ):
            write(
                objects / f"EndpointSlice.{item['metadata']['name']}.json",
                json.dumps(trim(item, kp.ENDPOINT_SLICES), indent=1, sort_keys=True),
            )
        try:
            response = probe.get(service_proxy(namespace, service, 443, "/healthz", "https"), accept="*/*", timeout=5)
            status, body = str(response.status_code), response.text
        except ClusterTimeout:
            status, body = "timeout", ""
        write(out / f"healthz.{service}.status", status + "\n")
        write(out / f"healthz.{service}.body", body)
    for kind, name in CONFIGURATIONS:
        raw = admin.get_object(kp.object_path(kind, name))
        if raw is not None:
            write(objects / f"{kind.kind}.{name}.json", json.dumps(trim(raw, kind), indent=1, sort_keys=True))
    params = AdmissionDryRunParams()
    for case in params.systems:
        response = probe.dry_run_create(
            kp.collection_path(kp.PODS, params.namespace), probe_pod(params, case), timeout=30
        )
        write(out / f"dry_run.{case.system}.status", f"{response.status_code}\n")
        write(out / f"dry_run.{case.system}.body", response.text)


def main(state_dir: Path, argv: list[str]) -> None:
    """Capture every state, or only those whose labels are given (the others are kept as they are)."""

    def settings(kubeconfig: str) -> ClusterSettings:
        return ClusterSettings(
            name="outpost-sandbox",
            deadline_seconds=60,
            auth=KubeconfigAuth(mode="kubeconfig", path=str(state_dir / kubeconfig)),
        )

    wanted = [state for state in STATES if not argv or label_of(*state) in argv]
    if not argv:
        shutil.rmtree(OUT, ignore_errors=True)
    for fault, target, fail in wanted:
        label = label_of(fault, target, fail)
        shutil.rmtree(OUT / label, ignore_errors=True)
        with (
            ClusterWriter.from_settings(settings("kubeconfig")) as admin,
            Cluster.from_settings(settings("probe.kubeconfig")) as probe,
        ):
            if fail:
                failure_policy(admin, "Fail")
            if fault != "healthy":
                faults.break_fault(fault, target, state_dir)
            try:
                capture(admin, probe, OUT / label)
            finally:
                if fault != "healthy":
                    faults.heal(fault, state_dir=state_dir)
                if fail:
                    failure_policy(admin, "Ignore")
        print("captured", label, flush=True)
    dedupe(OUT, [label_of(*state) for state in wanted if state[0] != "healthy"])


def dedupe(out: Path, labels: list[str]) -> None:
    """A fault's objects: only those that differ from healthy, plus `deleted.json` naming the absent ones."""
    healthy = {p.name: p.read_text() for p in (out / "healthy" / "objects").glob("*.json")}
    for state in (out / label for label in labels):
        present = set()
        for path in (state / "objects").glob("*.json"):
            present.add(path.name)
            if healthy.get(path.name) == path.read_text():
                path.unlink()
        write(state / "deleted.json", json.dumps(sorted(set(healthy) - present)) + "\n")
        if (state / "objects").is_dir() and not any((state / "objects").iterdir()):
            (state / "objects").rmdir()
