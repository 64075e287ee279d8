"""E2e: every sandbox fault is observable through the API server, and `heal` undoes it.

Each test breaks one thing with the Python API (`outpost_sandbox.faults`), observes it the way a
check would (proxy status codes, object fields, 429s for the probe's own identity), heals, and
observes the healthy state again. A `finally: heal()` keeps one failing test from poisoning the
next. The CLI is exercised once end to end (`python -m outpost_sandbox break/heal`).
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from cryptography import x509
from sandbox_http import KRUISE_WEBHOOK_HEALTHZ, LS_WEB, age, api, dry_run_pod, get_json

from outpost_sandbox import faults

pytestmark = pytest.mark.sandbox



def status_of(sb: Any, path: str, admin: bool = False) -> int:
    return api(sb, path, probe=not admin).status_code


def eventually(what: str, predicate: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s: {what}", pytrace=False)
        time.sleep(0.5)


def manager_pod(sb: Any, ns: str, selector: str) -> str:
    items = get_json(sb, f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
    assert items, f"no pod {selector} in {ns}"
    return str(items[0]["metadata"]["name"])


def dry_run(sb: Any) -> dict[str, Any]:
    return dry_run_pod(sb, {"koordinator.sh/enable-colocation": "true",
                            "apps.kruise.io/inject-readiness-gate": "true"})


def koord_mutated(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"]["labels"].get("koordinator.sh/qosClass") == "BE")


def kruise_mutated(pod: dict[str, Any]) -> bool:
    return {"conditionType": "KruisePodReady"} in (pod["spec"].get("readinessGates") or [])


@pytest.fixture
def sb(sandbox: Any) -> Iterator[Any]:
    faults.heal(state_dir=sandbox.state_dir)
    try:
        yield sandbox
    finally:
        faults.heal(state_dir=sandbox.state_dir)
    assert faults.active(sandbox.state_dir) == []


def brk(sb: Any, name: str, target: str | None = None, **options: Any) -> None:
    faults.break_fault(name, target, sb.state_dir, **options)


def heal(sb: Any, name: str) -> None:
    assert faults.heal(name, state_dir=sb.state_dir), f"{name} was not active"


# ---- backends ---------------------------------------------------------------------------------------
def test_kruise_webhook_500_then_healed(sb: Any) -> None:
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) == 200
    brk(sb, "backend-500", "kruise-webhook")
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) in (500, 503)
    heal(sb, "backend-500")
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) == 200


def test_kruise_webhook_down_is_an_error_through_the_proxy(sb: Any) -> None:
    brk(sb, "backend-down", "kruise-webhook")
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) >= 500
    heal(sb, "backend-down")
    eventually("webhook healthz 200", lambda: status_of(sb, KRUISE_WEBHOOK_HEALTHZ) == 200, 20)


def test_kruise_manager_health_500_body_and_wrong_body(sb: Any) -> None:
    pod = manager_pod(sb, "kruise-system", "control-plane=controller-manager")
    path = f"/api/v1/namespaces/kruise-system/pods/{pod}:8000/proxy/healthz"
    brk(sb, "backend-500", "kruise-manager")
    r = api(sb, path)
    assert r.status_code == 500
    assert "[-]ping failed: reason withheld" in r.text
    heal(sb, "backend-500")
    brk(sb, "backend-wrong-body", "kruise-manager")
    r = api(sb, path)
    assert r.status_code == 200
    assert r.text != "ok"
    heal(sb, "backend-wrong-body")
    assert (api(sb, path).status_code, api(sb, path).text) == (200, "ok")


def test_koord_manager_hang_times_out_through_pod_proxy(sb: Any) -> None:
    pod = manager_pod(sb, "koordinator-system", "koord-app=koord-manager")
    path = f"/api/v1/namespaces/koordinator-system/pods/{pod}:8000/proxy/readyz"
    brk(sb, "backend-hang", "koord-manager")
    with pytest.raises(httpx.TimeoutException):
        api(sb, path, timeout=3)
    heal(sb, "backend-hang")
    assert api(sb, path).status_code == 200


def test_ls_workload_slow(sb: Any) -> None:
    brk(sb, "backend-slow", "ls-workload", delay_ms=1500)
    t = time.monotonic()
    assert status_of(sb, LS_WEB) == 200
    assert time.monotonic() - t >= 1.5
    heal(sb, "backend-slow")
    t = time.monotonic()
    assert status_of(sb, LS_WEB) == 200
    assert time.monotonic() - t < 1.0


def test_kruise_daemon_down_through_node_proxy(sb: Any) -> None:
    node = get_json(sb, "/api/v1/nodes")["items"][0]["metadata"]["name"]
    path = f"/api/v1/nodes/{node}:10221/proxy/healthz"
    brk(sb, "backend-down", "kruise-daemon")
    assert status_of(sb, path, admin=True) >= 500
    heal(sb, "backend-down")
    assert status_of(sb, path, admin=True) == 200


@pytest.mark.parametrize(("fault", "target", "broken"), [
    ("backend-tls-bad-ca", "koord-webhook", koord_mutated),
    ("backend-tls-expired", "kruise-webhook", kruise_mutated),
    ("webhook-no-mutate", "koord-webhook", koord_mutated),
    ("backend-500", "kruise-webhook", kruise_mutated),
])
def test_webhook_faults_skip_mutation(sb: Any, fault: str, target: str,
                                      broken: Callable[[dict[str, Any]], bool]) -> None:
    assert broken(dry_run(sb))
    brk(sb, fault, target)
    assert not broken(dry_run(sb))  # failurePolicy Ignore: the pod is admitted unmutated
    heal(sb, fault)
    eventually("mutation back", lambda: broken(dry_run(sb)), 20)


# ---- controllers and objects ---------------------------------------------------------------------
@pytest.mark.parametrize(("fault", "ns", "selector"), [
    ("koordlet-missing", "koordinator-system", "koord-app=koordlet"),
    ("kruise-daemon-missing", "kruise-system", "control-plane=daemon"),
])
def test_daemonset_leaves_a_node(sb: Any, fault: str, ns: str, selector: str) -> None:
    node = sorted(n["metadata"]["name"] for n in get_json(sb, "/api/v1/nodes")["items"])[-1]

    def on_node() -> list[Any]:
        items: list[Any] = get_json(
            sb, f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}&fieldSelector=spec.nodeName={node}")["items"]
        return items

    assert on_node()
    brk(sb, fault, node)
    assert not on_node()
    heal(sb, fault)
    assert on_node()


def test_node_lease_stale_then_node_not_ready(sb: Any) -> None:
    node = sorted(n["metadata"]["name"] for n in get_json(sb, "/api/v1/nodes")["items"])[1]
    lease = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"
    assert age(get_json(sb, lease)["spec"]["renewTime"]) < 40
    brk(sb, "node-lease-stale", node)
    stale = get_json(sb, lease)["spec"]["renewTime"]
    eventually("lease older than kwok's 40 s duration", lambda: age(stale) > 40, 45)

    def ready_status() -> str:
        conds = get_json(sb, f"/api/v1/nodes/{node}")["status"]["conditions"]
        return str(next(c["status"] for c in conds if c["type"] == "Ready"))

    # the real node lifecycle controller notices the silent lease (node-monitor-grace-period)
    eventually(f"node {node} no longer Ready", lambda: ready_status() != "True", 90)
    assert get_json(sb, lease)["spec"]["renewTime"] == stale  # nobody renewed it meanwhile
    heal(sb, "node-lease-stale")
    assert age(get_json(sb, lease)["spec"]["renewTime"]) < 40
    assert ready_status() == "True"


def test_nodemetric_stale(sb: Any) -> None:
    node = sorted(n["metadata"]["name"] for n in get_json(sb, "/api/v1/nodes")["items"])[0]
    path = f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{node}"
    brk(sb, "nodemetric-stale", node)
    assert age(get_json(sb, path)["status"]["updateTime"]) > 300
    time.sleep(6)  # a renewer pass later it is still stale
    assert age(get_json(sb, path)["status"]["updateTime"]) > 300
    heal(sb, "nodemetric-stale")
    assert age(get_json(sb, path)["status"]["updateTime"]) < 60


@pytest.mark.parametrize(("fault", "low", "high"), [
    ("node-utilization-low", 0.0, 0.3),
    ("node-utilization-high", 0.85, 0.95),
])
def test_node_utilization_out_of_band(sb: Any, fault: str, low: float, high: float) -> None:
    def ratios() -> list[float]:
        nodes = {n["metadata"]["name"]: n for n in get_json(sb, "/api/v1/nodes")["items"]}
        out = []
        for m in get_json(sb, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics")["items"]:
            used = m["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"]
            alloc = nodes[m["metadata"]["name"]]["status"]["allocatable"]["cpu"]
            out.append(int(used.removesuffix("m")) / (float(alloc) * 1000))
        return out

    assert all(0.6 <= r <= 0.65 for r in ratios())
    brk(sb, fault)
    assert all(low <= r <= high for r in ratios())  # the fault returns once every NodeMetric shows it
    heal(sb, fault)
    assert all(0.6 <= r <= 0.65 for r in ratios())


def test_podgroup_failed_and_stuck(sb: Any) -> None:
    def groups() -> dict[str, dict[str, Any]]:
        items = get_json(sb, "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups")["items"]
        return {g["metadata"]["name"]: g for g in items}

    assert groups()["be-gang"]["status"]["phase"] == "Running"
    brk(sb, "podgroup-failed")
    brk(sb, "podgroup-stuck")
    g = groups()
    assert g["outpost-fault-failed-gang"]["status"]["phase"] == "Failed"
    stuck = g["outpost-fault-pending-gang"]["status"]
    assert stuck["phase"] == "Pending"
    assert age(stuck["scheduleStartTime"]) > 3000

    def unschedulable() -> bool:
        pods = get_json(sb, "/api/v1/namespaces/default/pods?labelSelector=app=outpost-fault-pending-gang")["items"]
        return len(pods) == 3 and all(
            any(c["type"] == "PodScheduled" and c["reason"] == "Unschedulable"
                for c in p["status"].get("conditions") or []) for p in pods)

    eventually("gang members unschedulable (real scheduler)", unschedulable, 60)
    heal(sb, "podgroup-failed")
    heal(sb, "podgroup-stuck")
    assert set(groups()) == {"be-gang"}


def test_be_eviction_events(sb: Any) -> None:
    def evictions() -> list[dict[str, Any]]:
        items = get_json(sb, "/api/v1/namespaces/default/events?fieldSelector=reason=evictPodSuccess")["items"]
        return list(items)

    assert evictions() == []
    brk(sb, "be-evictions", count=7)
    evs = evictions()
    assert len(evs) == 7
    for e in evs:
        assert e["type"] == "Warning"
        assert e["involvedObject"]["kind"] == "Pod"
        assert re.fullmatch(r"evict Pod:default/be-batch-[a-z0-9-]+, reason: .+", e["message"])
    heal(sb, "be-evictions")
    assert evictions() == []


def test_webhook_configuration_deleted(sb: Any) -> None:
    path = ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
            "koordinator-mutating-webhook-configuration")
    brk(sb, "webhook-config-deleted", "koordinator")
    assert status_of(sb, path) == 404
    assert not koord_mutated(dry_run(sb))
    heal(sb, "webhook-config-deleted")
    assert status_of(sb, path) == 200
    eventually("mutation back", lambda: koord_mutated(dry_run(sb)), 20)


def test_manager_scaled_to_zero_and_its_lease_goes_stale(sb: Any) -> None:
    path = "/apis/apps/v1/namespaces/kruise-system/deployments/kruise-controller-manager"
    brk(sb, "manager-scaled-to-zero", "kruise-controller-manager")
    assert "readyReplicas" not in get_json(sb, path)["status"]  # zero values are omitted
    lease = "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager"
    eventually("kruise-manager lease older than its duration",
               lambda: age(get_json(sb, lease)["spec"]["renewTime"]) > 15, 30)
    heal(sb, "manager-scaled-to-zero")
    assert get_json(sb, path)["status"]["readyReplicas"] == 2
    eventually("kruise-manager lease renewed", lambda: age(get_json(sb, lease)["spec"]["renewTime"]) < 15, 20)


def test_leader_lease_stale(sb: Any) -> None:
    lease = "/apis/coordination.k8s.io/v1/namespaces/koordinator-system/leases/koordinator-manager"
    brk(sb, "leader-lease-stale", "koordinator-manager")
    assert age(get_json(sb, lease)["spec"]["renewTime"]) > 60
    time.sleep(6)
    assert age(get_json(sb, lease)["spec"]["renewTime"]) > 60
    heal(sb, "leader-lease-stale")
    assert age(get_json(sb, lease)["spec"]["renewTime"]) < 15


# ---- API server -----------------------------------------------------------------------------------
def test_apiserver_overload_429_for_the_probe_while_readyz_200(sb: Any) -> None:
    # A LIST the probe's generated RBAC allows (the node checks'), and one it does not: Priority and
    # Fairness rejects both before authorization while the fault is on.
    allowed, refused = "/api/v1/nodes?limit=1", "/api/v1/namespaces/default/pods?limit=1"
    assert (status_of(sb, allowed), status_of(sb, refused)) == (200, 403)
    brk(sb, "apiserver-overload", "user:outpost-probe")
    codes = [status_of(sb, path) for _ in range(3) for path in (allowed, refused)]
    assert codes == [429] * 6
    assert status_of(sb, "/readyz") == 200  # health endpoints are exempt from APF
    assert status_of(sb, "/api/v1/pods?limit=1", admin=True) == 200  # system:masters is exempt
    heal(sb, "apiserver-overload")
    assert (status_of(sb, allowed), status_of(sb, refused)) == (200, 403)


def _ca_bundle_days(sb: Any) -> float:
    cfg = get_json(sb, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                       "kruise-mutating-webhook-configuration")
    cert = x509.load_pem_x509_certificate(base64.b64decode(cfg["webhooks"][0]["clientConfig"]["caBundle"]))
    return (cert.not_valid_after_utc - dt.datetime.now(dt.UTC)).total_seconds() / 86400


def test_webhook_cert_expiring_keeps_admission_working(sb: Any) -> None:
    assert _ca_bundle_days(sb) > 21
    brk(sb, "webhook-cert-expiring", days=5)
    assert _ca_bundle_days(sb) < 6
    eventually("admission works with the short-lived chain", lambda: kruise_mutated(dry_run(sb)), 20)
    heal(sb, "webhook-cert-expiring")
    assert _ca_bundle_days(sb) > 21


def _apiserver_cert_days(sb: Any) -> float:
    host, port = sb.server.removeprefix("https://").split(":")
    cert = x509.load_pem_x509_certificate(ssl.get_server_certificate((host, int(port))).encode())
    return (cert.not_valid_after_utc - dt.datetime.now(dt.UTC)).total_seconds() / 86400


@pytest.mark.parametrize(("fault", "low", "high"), [
    ("apiserver-cert-expiring", 0, 6),
    ("apiserver-cert-expired", -2, 0),
])
def test_apiserver_cert(sb: Any, fault: str, low: float, high: float) -> None:
    assert _apiserver_cert_days(sb) > 21
    brk(sb, fault)
    assert low < _apiserver_cert_days(sb) < high
    heal(sb, fault)
    assert _apiserver_cert_days(sb) > 21


def test_apiserver_down_and_back(sb: Any) -> None:
    brk(sb, "apiserver-down")
    with pytest.raises(httpx.ConnectError):
        api(sb, "/readyz")
    heal(sb, "apiserver-down")
    assert status_of(sb, "/readyz") == 200
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) == 200


def test_kwok_down_stops_every_node_lease(sb: Any) -> None:
    lease = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/kwok-node-0"
    brk(sb, "kwok-down")
    first = get_json(sb, lease)["spec"]["renewTime"]
    time.sleep(15)  # kwok renews every quarter of the 40 s duration: at least once in 15 s
    assert get_json(sb, lease)["spec"]["renewTime"] == first
    heal(sb, "kwok-down")
    assert age(get_json(sb, lease)["spec"]["renewTime"]) < 40


def test_etcd_down_fails_readyz_and_heals(sb: Any) -> None:
    brk(sb, "etcd-down")
    eventually("/readyz not 200 while etcd is down", lambda: status_of(sb, "/readyz") != 200, 30)
    r = api(sb, "/readyz?verbose")
    assert "[-]etcd" in r.text
    heal(sb, "etcd-down")
    assert status_of(sb, "/readyz") == 200
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) == 200  # the backends survived the outage


# ---- command line ---------------------------------------------------------------------------------
def test_cli_break_and_heal(sb: Any) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "outpost_sandbox", *args, "--state-dir", str(sb.state_dir)],
                              capture_output=True, text=True, timeout=120, check=False)

    out = run("break", "backend-500", "--target", "kruise-webhook")
    assert out.returncode == 0, out.stderr
    assert "should fail: admission-dry-run, kruise-webhook" in out.stdout
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) in (500, 503)
    bad = run("break", "backend-500", "--target", "no-such-target")
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1
    assert "no-such-target" in bad.stderr
    out = run("heal")
    assert (out.returncode, out.stdout.strip()) == (0, "healed: backend-500 (kruise-webhook)")
    assert status_of(sb, KRUISE_WEBHOOK_HEALTHZ) == 200
