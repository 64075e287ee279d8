"""The sandbox is a real cluster: real scheduler, real RBAC, kwok nodes with renewing Leases. The fault hooks
(stop/start a component, rotate the serving certificate) are exercised by test_fault_catalogue_e2e.py's etcd-down,
apiserver-down and apiserver-cert-* cases, with the launcher's own status observed there.

Everything here talks to the sandbox the way the probe will: over HTTPS to 127.0.0.1, verifying
the sandbox CA, with the static tokens from the written kubeconfigs.
"""

from __future__ import annotations

import ipaddress
import json
import ssl
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml

if TYPE_CHECKING:
    from conftest import SandboxInfo


POD_NET = ipaddress.ip_network("10.244.0.0/16")
NODE_NET = ipaddress.ip_network("10.245.0.0/16")


def _client(sb: SandboxInfo, token: str) -> httpx.Client:
    ctx = ssl.create_default_context(cafile=str(sb.ca_path))
    return httpx.Client(base_url=sb.server, verify=ctx, timeout=15, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def probe(sandbox: SandboxInfo) -> Iterator[httpx.Client]:
    with _client(sandbox, sandbox.probe_token) as c:
        yield c


@pytest.fixture
def admin(sandbox: SandboxInfo) -> Iterator[httpx.Client]:
    with _client(sandbox, sandbox.admin_token) as c:
        yield c


def _eventually(what: str, timeout: float, fn: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}", pytrace=False)


def _ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))


def test_written_kubeconfigs_name_the_public_endpoint_and_the_right_users(sandbox: SandboxInfo) -> None:
    admin_cfg = yaml.safe_load(sandbox.kubeconfig.read_text())
    probe_cfg = yaml.safe_load(sandbox.probe_kubeconfig.read_text())
    assert admin_cfg["clusters"][0]["cluster"]["server"] == sandbox.server
    assert probe_cfg["clusters"][0]["cluster"]["server"] == sandbox.server
    assert probe_cfg["users"][0]["name"] == "outpost-probe"
    assert sandbox.kubeconfig.stat().st_mode & 0o077 == 0, "admin kubeconfig holds a token: must be 0600"
    assert sandbox.probe_kubeconfig.stat().st_mode & 0o077 == 0


def test_all_fake_nodes_ready_via_kubectl(sandbox: SandboxInfo) -> None:
    out = sandbox.kubectl("get", "nodes", "-l", "type=kwok", "-o", "json").stdout
    nodes = json.loads(out)["items"]
    names = {n["metadata"]["name"] for n in nodes}
    assert {f"kwok-node-{i}" for i in range(sandbox.nodes)} <= names
    ips = []
    for n in nodes:
        assert n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert _ready(n), f"node {n['metadata']['name']} not Ready"
        assert int(n["status"]["allocatable"]["pods"]) >= 110
        internal = [a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP"]
        assert len(internal) == 1
        ips.append(ipaddress.ip_address(internal[0]))
    assert all(ip in NODE_NET for ip in ips)
    assert len(set(ips)) == len(ips), "every fake node needs its own InternalIP"


def test_deployment_scheduled_by_real_scheduler_and_running(sandbox: SandboxInfo) -> None:
    ns = "sandbox-e2e"
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                # Fake nodes carry kwok's taint; pods meant for them tolerate it (the process node runs the managers).
                "spec": {
                    "tolerations": [{"key": "kwok-controller/provider", "operator": "Exists"}],
                    "nodeSelector": {"type": "kwok"},
                    "containers": [
                        {"name": "web", "image": "registry.invalid/web:1", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                },
            },
        },
    }
    sandbox.kubectl("create", "namespace", ns)
    try:
        path = sandbox.state_dir / "e2e-deployment.yaml"
        path.write_text(yaml.safe_dump(manifest))
        sandbox.kubectl("apply", "-f", str(path))

        def running() -> list[dict[str, Any]] | None:
            pods = json.loads(sandbox.kubectl("get", "pods", "-n", ns, "-l", "app=web", "-o", "json").stdout)
            items: list[dict[str, Any]] = pods["items"]
            ok = [p for p in items if p["status"].get("phase") == "Running" and p["status"].get("podIP")]
            return items if len(items) == 6 and len(ok) == 6 else None

        pods = _eventually("6 web pods Running with an IP", 90, running)
        for p in pods:
            assert p["spec"]["schedulerName"] == "default-scheduler"
            assert p["spec"]["nodeName"].startswith("kwok-node-")
            scheduled = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
            assert scheduled
            assert scheduled[0]["status"] == "True"
            assert ipaddress.ip_address(p["status"]["podIP"]) in POD_NET
            assert ipaddress.ip_address(p["status"]["hostIP"]) in NODE_NET
        events = json.loads(
            sandbox.kubectl("get", "events", "-n", ns, "--field-selector", "reason=Scheduled", "-o", "json").stdout
        )
        sources = {e.get("reportingComponent") or e.get("source", {}).get("component") for e in events["items"]}
        assert "default-scheduler" in sources
    finally:
        sandbox.kubectl("delete", "namespace", ns, "--wait=false")


def test_probe_identity_is_read_only_and_sees_health(sandbox: SandboxInfo, probe: httpx.Client) -> None:
    assert probe.get("/readyz").status_code == 200
    assert probe.get("/livez").status_code == 200
    assert probe.get("/readyz", params={"verbose": "1"}).status_code == 200
    assert probe.get("/api/v1/nodes", params={"limit": "1"}).status_code == 200
    assert (
        probe.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", params={"limit": "1"}).status_code
        == 200
    )
    assert probe.get("/api/v1/secrets").status_code == 403
    assert probe.get("/api/v1/namespaces/kube-system/secrets").status_code == 403
    assert probe.get("/api/v1/nodes/kwok-node-0/proxy/healthz").status_code == 403
    created = probe.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "x"}, "data": {}})
    assert created.status_code == 403
    can = sandbox.kubectl("auth", "can-i", "list", "secrets", "-A", probe=True, check=False)
    assert can.stdout.strip() == "no"
    # The service proxy only by Service name, in its namespace (the generated RBAC): not across namespaces.
    can = sandbox.kubectl("auth", "can-i", "get", "services/proxy", "-A", probe=True, check=False)
    assert can.stdout.strip() == "no"
    can = sandbox.kubectl(
        "auth",
        "can-i",
        "get",
        "services/https:kruise-webhook-service:443",
        "--subresource=proxy",
        "-n",
        "kruise-system",
        probe=True,
        check=False,
    )
    assert can.stdout.strip() == "yes"


def test_anonymous_and_wrong_token_are_refused(sandbox: SandboxInfo) -> None:
    with _client(sandbox, "not-a-token") as c:
        assert c.get("/api/v1/nodes").status_code == 401


def test_version_is_pinned_kubernetes(probe: httpx.Client) -> None:
    r = probe.get("/version")
    assert r.status_code == 200
    assert r.json()["gitVersion"] == "v1.37.2"


def test_node_leases_exist_and_renew(admin: httpx.Client, sandbox: SandboxInfo) -> None:
    leases = admin.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases").json()["items"]
    by_name = {item["metadata"]["name"]: item for item in leases}
    for i in range(sandbox.nodes):
        assert f"kwok-node-{i}" in by_name, f"no Lease for kwok-node-{i}"
        assert by_name[f"kwok-node-{i}"]["spec"]["leaseDurationSeconds"] == 40
    first = by_name["kwok-node-0"]["spec"]["renewTime"]

    def renewed() -> bool:
        r = admin.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/kwok-node-0")
        return bool(r.json()["spec"]["renewTime"] != first)

    _eventually("Lease kwok-node-0 renewed", 40, renewed)


def test_up_again_is_idempotent(sandbox: SandboxInfo) -> None:
    again = sandbox.handle.up(nodes=sandbox.nodes, install_systems=False)
    assert again.already_up
    assert again.server == sandbox.server
