"""kruise-daemon-coverage end to end: healthy → ok and one ping (with and without per-node /healthz);
kruise-daemon-missing → failed naming the node; with per-node /healthz on (the opt-in node-proxy
ClusterRole bound to the probe for the test), backend-down, backend-500 and backend-hang aimed at
kruise-daemon → failed on the first run after break, naming the nodes, no ping; without the role,
asking for /healthz is `error` (the probe could not observe), never ok."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from node_e2e import fault, run_as_probe

from outpost import rbac
from outpost.rbac import NODE_PROXY_ROLE, PROBE_USER
from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "kruise-daemon-coverage"
DS = "daemonset kruise-system/kruise-daemon"
HEALTHZ: dict[str, Any] = {"probe_healthz": True, "healthz_timeout_seconds": 3}


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def node_proxy_granted(sandbox: SandboxInfo) -> Iterator[None]:
    """Apply what `outpost rbac` generates once the environment turns probe_healthz on: the node-proxy
    ClusterRole and its binding to the probe (the local environment, with /healthz off, has neither)."""
    settings = rbac.local_settings()
    checks = dict(settings.checks)
    checks[CHECK] = checks[CHECK].model_copy(update={"params": {**checks[CHECK].params, **HEALTHZ}})
    documents = rbac.probe_documents(settings.model_copy(update={"checks": checks}))
    node_proxy = [d for d in documents if d.obj["metadata"]["name"] == NODE_PROXY_ROLE]
    assert [d.obj["kind"] for d in node_proxy] == ["ClusterRole", "ClusterRoleBinding"]
    assert node_proxy[1].obj["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                              "name": PROBE_USER}]
    manifest = sandbox.state_dir / "e2e-node-proxy.yaml"
    manifest.write_text(rbac.render(node_proxy))
    sandbox.kubectl("apply", "-f", str(manifest))
    try:
        yield
    finally:
        sandbox.kubectl("delete", "-f", str(manifest), "--ignore-not-found")


def test_healthy_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.OK, result.errors
    assert receiver.pings_for(CHECK) == 1


def test_healthz_without_the_node_proxy_role_is_error(tmp_path: Path, sandbox: SandboxInfo,
                                                      receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver, HEALTHZ)
    assert result.status is Status.ERROR
    assert "HTTP 403" in result.summary
    assert receiver.pings_for(CHECK) == 0


def test_healthy_with_healthz_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver,
                                         node_proxy_granted: None) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver, HEALTHZ)
    assert result.status is Status.OK, result.errors
    assert result.details["healthz"]["probed"] == sandbox.nodes
    assert receiver.pings_for(CHECK) == 1


def test_kruise_daemon_missing_is_failed_naming_the_node(tmp_path: Path, sandbox: SandboxInfo,
                                                         receiver: HeartbeatReceiver) -> None:
    with fault(sandbox.state_dir, "kruise-daemon-missing") as record:
        node = record["undo"]["node"]
        result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.FAILED, result.summary
    assert result.errors == [f"{DS}: node {node} has no pod"]
    assert receiver.pings_for(CHECK) == 0


@pytest.mark.parametrize(("name", "detail"), [
    ("backend-down", "HTTP 503 (error trying to reach service"),
    ("backend-500", "HTTP 500 '[-]ping failed: reason withheld"),
    ("backend-hang", "no answer within 3 s through the API server proxy"),
])
def test_backend_fault_on_kruise_daemon_fails_healthz(tmp_path: Path, sandbox: SandboxInfo,
                                                      receiver: HeartbeatReceiver, node_proxy_granted: None,
                                                      name: str, detail: str) -> None:
    with fault(sandbox.state_dir, name, target="kruise-daemon"):
        result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver, HEALTHZ)
    assert result.status is Status.FAILED, result.summary
    assert result.errors[0].startswith(f"{DS}: node kwok-node-0 :10221/healthz: {detail}")
    assert result.details["healthz"]["healthy"] == 0
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0
