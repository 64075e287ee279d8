"""kruise-daemon-coverage end to end, with local.yaml's params (real and fake nodes; /healthz asked of both, where
the sandbox's stand-in answers for every node).

Healthy → ok and one ping, with and without per-node /healthz (the opt-in node-proxy ClusterRole bound to the
probe for the test): every node probed. With the default `healthz_classes` only the real node (the process
node) is asked and the fake ones are counted as not probed. Without the role, asking for /healthz is `error`
(the probe could not observe), never ok. A daemon missing from a node, or failing its /healthz, is the fault
catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from check_runs import REAL_NODES, CheckRuns

from outpost.result import Status
from outpost.tooling import rbac
from outpost.tooling.rbac import NODE_PROXY_ROLE, PROBE_USER

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "kruise-daemon-coverage"
HEALTHZ: dict[str, Any] = {"probe_healthz": True, "healthz_timeout_seconds": 3}


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
    assert node_proxy[1].obj["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": PROBE_USER}
    ]
    manifest = sandbox.state_dir / "e2e-node-proxy.yaml"
    manifest.write_text(rbac.render(node_proxy))
    sandbox.kubectl("apply", "-f", str(manifest))
    try:
        yield
    finally:
        sandbox.kubectl("delete", "-f", str(manifest), "--ignore-not-found")


def test_healthy_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, shipped=True)
    assert result.details["covered"] == runs.sandbox.nodes + REAL_NODES


def test_healthz_without_the_node_proxy_role_is_error(runs: CheckRuns) -> None:
    result = runs.probe(CHECK, HEALTHZ, shipped=True)
    assert result.status is Status.ERROR
    assert "HTTP 403" in result.summary
    assert runs.receiver.pings_for(CHECK) == 0


def test_healthy_with_healthz_pings_once(runs: CheckRuns, node_proxy_granted: None) -> None:
    result = runs.healthy(CHECK, HEALTHZ, shipped=True)
    assert result.details["healthz"]["by_class"] == {
        "real": {"probed": REAL_NODES, "healthy": REAL_NODES},
        "fake": {"probed": runs.sandbox.nodes, "healthy": runs.sandbox.nodes},
    }


def test_default_healthz_classes_ask_the_real_node_only(runs: CheckRuns, node_proxy_granted: None) -> None:
    params = {**HEALTHZ, "healthz_classes": ["real"]}  # the default, over local.yaml's [real, fake]
    result = runs.healthy(CHECK, params, shipped=True)
    assert result.details["healthz"]["probed"] == REAL_NODES
    assert result.details["healthz"]["not_probed"] == {"fake": runs.sandbox.nodes}
    assert result.summary.endswith(
        f"healthy on all {REAL_NODES} real nodes probed, {runs.sandbox.nodes} fake not probed"
    )
