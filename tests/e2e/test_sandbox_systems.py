"""E2e: Koordinator and OpenKruise as installed in the sandbox look and answer like upstream.

Everything is observed through the real API server (its service, pod and node proxy), mostly with
the probe's own read-only identity, so these tests also prove the probe can see what checks need.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest
from sandbox_http import KRUISE_WEBHOOK_HEALTHZ, LS_WEB, age, api, dry_run_pod, get_json

from outpost_sandbox import systems
from outpost_sandbox.backends import netns

pytestmark = pytest.mark.sandbox

KOORD_WEBHOOK_HEALTHZ = (
    "/api/v1/namespaces/koordinator-system/services/https:koordinator-webhook-service:443/proxy/healthz")


def pods(sb: Any, ns: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get_json(sb, f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
    return items


def test_kruise_webhook_service_healthz_is_200_empty(sandbox: Any) -> None:
    r = api(sandbox, KRUISE_WEBHOOK_HEALTHZ)
    assert (r.status_code, r.text) == (200, "")


def test_koord_webhook_service_healthz_is_200(sandbox: Any) -> None:
    assert api(sandbox, KOORD_WEBHOOK_HEALTHZ).status_code == 200


def test_koord_manager_readyz_200_and_no_healthz(sandbox: Any) -> None:
    managers = pods(sandbox, "koordinator-system", "koord-app=koord-manager")
    assert len(managers) == 2
    for pod in managers:
        base = f"/api/v1/namespaces/koordinator-system/pods/{pod['metadata']['name']}:8000/proxy"
        r = api(sandbox, base + "/readyz")
        assert (r.status_code, r.text) == (200, "ok")
        assert api(sandbox, base + "/healthz").status_code == 404


def test_kruise_manager_healthz_and_readyz(sandbox: Any) -> None:
    managers = pods(sandbox, "kruise-system", "control-plane=controller-manager")
    assert len(managers) == 2
    for pod in managers:
        base = f"/api/v1/namespaces/kruise-system/pods/{pod['metadata']['name']}:8000/proxy"
        for path in ("/healthz", "/readyz"):
            r = api(sandbox, base + path)
            assert (r.status_code, r.text) == (200, "ok"), path
        verbose = api(sandbox, base + "/readyz?verbose")
        assert "[+]webhook-ready ok" in verbose.text


def test_kruise_daemon_answers_on_every_node_through_node_proxy(sandbox: Any) -> None:
    nodes = get_json(sandbox, "/api/v1/nodes")["items"]
    daemons = pods(sandbox, "kruise-system", "control-plane=daemon")
    assert {p["spec"]["nodeName"] for p in daemons} == {n["metadata"]["name"] for n in nodes}
    for node in nodes[:3]:  # node proxy needs nodes/proxy, which the probe does not hold: admin
        r = api(sandbox, f"/api/v1/nodes/{node['metadata']['name']}:10221/proxy/healthz", probe=False)
        assert (r.status_code, r.text) == (200, "ok")


def test_ls_workload_answers_through_its_service(sandbox: Any) -> None:
    r = api(sandbox, LS_WEB)
    assert r.status_code == 200
    slices = get_json(sandbox, "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
                               "?labelSelector=kubernetes.io/service-name=ls-web")["items"]
    ready = [e for s in slices for e in s.get("endpoints") or [] if e["conditions"].get("ready")]
    assert len(ready) == 2  # written by the real endpointslice controller


def test_upstream_names_labels_and_ports(sandbox: Any) -> None:
    d = get_json(sandbox, "/apis/apps/v1/namespaces/koordinator-system/deployments/koord-manager")
    assert d["spec"]["selector"]["matchLabels"] == {"koord-app": "koord-manager"}
    ports = {p["containerPort"] for p in d["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports == {8000, 8080, 9876}
    ds = get_json(sandbox, "/apis/apps/v1/namespaces/koordinator-system/daemonsets/koordlet")
    assert ds["spec"]["template"]["spec"]["hostNetwork"] is True
    assert {"operator": "Exists"} in ds["spec"]["template"]["spec"]["tolerations"]
    k = get_json(sandbox, "/apis/apps/v1/namespaces/kruise-system/deployments/kruise-controller-manager")
    assert k["status"]["readyReplicas"] == 2
    kd = get_json(sandbox, "/apis/apps/v1/namespaces/kruise-system/daemonsets/kruise-daemon")
    terms = kd["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]} in terms[0]["matchExpressions"]
    for svc, ns in (("koordinator-webhook-service", "koordinator-system"), ("kruise-webhook-service", "kruise-system")):
        s = get_json(sandbox, f"/api/v1/namespaces/{ns}/services/{svc}")
        assert [(p["port"], p["targetPort"]) for p in s["spec"]["ports"]] == [(443, 9876)]
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for system in ("koordinator", "kruise"):
            name = f"{system}-{kind.removesuffix('webhookconfigurations')}-webhook-configuration"
            cfg = get_json(sandbox, f"/apis/admissionregistration.k8s.io/v1/{kind}/{name}")
            assert all(w["failurePolicy"] == "Ignore" and w["clientConfig"]["caBundle"] for w in cfg["webhooks"])
    crds = {c["metadata"]["name"] for c in get_json(
        sandbox, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]}
    assert {"podgroups.scheduling.sigs.k8s.io", "nodemetrics.slo.koordinator.sh"} <= crds


def test_leader_leases_are_renewed(sandbox: Any) -> None:
    for ns, name in (("koordinator-system", "koordinator-manager"), ("koordinator-system", "koord-scheduler"),
                     ("koordinator-system", "koord-descheduler"), ("kruise-system", "kruise-manager")):
        lease = get_json(sandbox, f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
        assert age(lease["spec"]["renewTime"]) < 15, name
    # Renewed, not merely recent: the renewTime moves on within two renew periods (5 s each).
    path = "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager"
    before = get_json(sandbox, path)["spec"]["renewTime"]
    deadline = time.monotonic() + 12
    while get_json(sandbox, path)["spec"]["renewTime"] == before:
        assert time.monotonic() < deadline, f"kruise-manager lease not renewed since {before}"
        time.sleep(0.5)


def test_every_node_has_a_fresh_nodemetric_in_band(sandbox: Any) -> None:
    nodes = {n["metadata"]["name"]: n for n in get_json(sandbox, "/api/v1/nodes")["items"]}
    metrics = get_json(sandbox, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics")["items"]
    assert {m["metadata"]["name"] for m in metrics} >= set(nodes)
    for m in metrics:
        assert age(m["status"]["updateTime"]) < 300, m["metadata"]["name"]
    r = api(sandbox, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics")  # the probe can read them
    assert r.status_code == 200


def test_admission_dry_run_is_mutated_by_both_webhooks(sandbox: Any) -> None:
    pod = dry_run_pod(sandbox, {"koordinator.sh/enable-colocation": "true",
                                "apps.kruise.io/inject-readiness-gate": "true"})
    assert pod["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
    assert pod["metadata"]["labels"]["koordinator.sh/priority-class"] == "koord-batch"
    assert {"conditionType": "KruisePodReady"} in pod["spec"]["readinessGates"]
    plain = dry_run_pod(sandbox, {"app": "not-opted-in"})
    assert "koordinator.sh/qosClass" not in plain["metadata"]["labels"]
    assert not plain["spec"].get("readinessGates")


def test_uninstall_removes_network_and_install_restores(sandbox: Any) -> None:
    try:
        systems.uninstall(sandbox.state_dir)
        assert systems.daemon_pid(sandbox.state_dir) is None
        assert not netns.exists()
        links = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout
        assert netns.HOST_IF not in {link["ifname"] for link in json.loads(links)}
        routes = subprocess.run(["ip", "route", "show"], capture_output=True, text=True, check=True).stdout
        assert not any(cidr in routes for cidr in netns.OWNED_CIDRS)
        # No request through the proxy here: with the routes gone the API server would dial pod
        # IPs via the default route, i.e. off this machine.
        systems.uninstall(sandbox.state_dir)  # idempotent
    finally:
        systems.install(sandbox.kubeconfig, sandbox.state_dir, log=lambda _m: None)
    systems.install(sandbox.kubeconfig, sandbox.state_dir, log=lambda _m: None)  # idempotent
    assert (api(sandbox, KRUISE_WEBHOOK_HEALTHZ).status_code, netns.exists()) == (200, True)


def test_a_second_sandbox_is_refused_by_name(sandbox: Any, tmp_path: Any) -> None:
    with pytest.raises(systems.SystemsError, match=str(sandbox.state_dir.resolve())):
        systems.install(sandbox.kubeconfig, tmp_path, log=lambda _m: None)
    systems.uninstall(tmp_path)  # must leave the running sandbox's network alone
    assert netns.exists()
    assert api(sandbox, KRUISE_WEBHOOK_HEALTHZ).status_code == 200


def test_network_plan_matches_the_launcher() -> None:
    from outpost_sandbox import cluster

    assert (netns.POD_CIDR, netns.SERVICE_CIDR) == (cluster.POD_CIDR, cluster.SERVICE_CIDR)
    assert str(cluster.NODE_IP_BASE) + "/16" == netns.NODE_CIDR
