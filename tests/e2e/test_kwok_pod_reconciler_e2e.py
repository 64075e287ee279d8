"""kwok-pod-reconciler end to end, under the sandbox's own write identity `outpost-reconciler`
(reconciler.kubeconfig, RBAC from `outpost.tooling.rbac.reconciler_manifests`), run as `outpost run` runs it.

Healthy kwok: nothing moved, one ping; the identity may do exactly what the job does. With kwok stopped, a dry
run moves nothing and a run moves exactly the fake-node pods kwok left Pending (not an unbound pod nor one on a
node kwok does not manage), as kwok's pod-ready stage would, then finds nothing; as the read-only probe the job
is refused. Everything is cleaned up and kwok healed afterwards.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from check_runs import CheckRuns

from outpost_sandbox import faults
from outpost_sandbox.faults.base import NO_KOORDLET_LABEL, NO_KRUISE_DAEMON_LABEL

if TYPE_CHECKING:
    from conftest import SandboxInfo

JOB = "kwok-pod-reconciler"
NS = "default"
OTHER_NODE = "outpost-e2e-not-kwok"
FAKE_PODS = {"outpost-e2e-fake-a": "kwok-node-0", "outpost-e2e-fake-b": "kwok-node-1"}  # pod -> its fake node
ON_OTHER_NODE = "outpost-e2e-other-node"
UNBOUND = "outpost-e2e-unbound"
EVERY_POD = (*FAKE_PODS, ON_OTHER_NODE, UNBOUND)
MOVED = ", ".join(f"{NS}/{name}" for name in FAKE_PODS)


def config(runs: CheckRuns, **params: Any) -> Path:
    # kwok is stopped in these tests, so no race with it: pods need not wait min_pending_seconds.
    return runs.local(JOB, {"min_pending_seconds": 0, **params})


def kubectl_as_reconciler(sandbox: SandboxInfo, *args: str) -> str:
    proc = subprocess.run(
        [str(sandbox.bin_dir / "kubectl"), "--kubeconfig", str(sandbox.state_dir / "reconciler.kubeconfig"), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return proc.stdout.strip()


def pod(name: str, node: str | None) -> dict[str, Any]:
    # Bound by nodeName, past the scheduler: the fake nodes' NoSchedule taint does not apply.
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "library/busybox:1.36"}]}
    if node:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = {"outpost.sandbox/no-such-node": "true"}  # the scheduler can never bind it
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def statuses(sandbox: SandboxInfo) -> dict[str, dict[str, Any]]:
    out = sandbox.kubectl("get", "pods", "-n", NS, "-o", "json").stdout
    return {p["metadata"]["name"]: p["status"] for p in json.loads(out)["items"] if p["metadata"]["name"] in EVERY_POD}


def phases(sandbox: SandboxInfo) -> dict[str, str]:
    return {name: status.get("phase", "") for name, status in statuses(sandbox).items()}


def internal_ip(sandbox: SandboxInfo, node: str) -> str:
    addresses = json.loads(sandbox.kubectl("get", "node", node, "-o", "json").stdout)["status"]["addresses"]
    return str(next(a["address"] for a in addresses if a["type"] == "InternalIP"))


def test_healthy_kwok_leaves_nothing_to_do(runs: CheckRuns, sandbox: SandboxInfo) -> None:
    code, result = runs.cli(runs.local(JOB), JOB)
    assert (code, result["status"]) == (0, "ok"), result
    assert result["summary"] == "moved 0 Pending pod(s) on fake nodes to Running"
    assert result["details"]["fake_nodes"] == sandbox.nodes
    assert result["details"]["moved"] == []
    assert result["reported"] is True
    assert runs.receiver.pings_for(JOB) == 1


def test_the_write_identity_can_do_only_what_the_job_does(sandbox: SandboxInfo) -> None:
    # Exactly its generated RBAC (kwok_pod_reconciler.declared_access): it lists, it never GETs one object.
    allowed = [("list", "nodes"), ("list", "pods"), ("patch", "pods/status")]
    refused = [
        ("get", "nodes"),
        ("get", "pods"),
        ("patch", "pods"),
        ("update", "pods/status"),
        ("delete", "pods"),
        ("create", "pods"),
        ("patch", "nodes"),
        ("patch", "nodes/status"),
        ("list", "secrets"),
        ("list", "events"),
    ]

    def can_i(verb: str, what: str) -> str:
        resource, _, subresource = what.partition("/")
        extra = [f"--subresource={subresource}"] if subresource else []
        return kubectl_as_reconciler(sandbox, "auth", "can-i", verb, resource, *extra, "-A")

    assert {(verb, what): can_i(verb, what) for verb, what in allowed} == dict.fromkeys(allowed, "yes")
    assert {(verb, what): can_i(verb, what) for verb, what in refused} == dict.fromkeys(refused, "no")


@pytest.fixture
def kwok_down_with_pods(sandbox: SandboxInfo) -> Iterator[None]:
    faults.break_fault("kwok-down", state_dir=sandbox.state_dir)
    try:
        # A node kwok does not manage (no kwok annotation), which the sandbox's DaemonSets leave alone
        # (their pods on it would never be ready, and healing kwok waits for them). It registers with a capacity,
        # as every kubelet does: koord-manager v1.6.0 panics on a node without allocatable (noderesource
        # plugins/util/util.go PrepareNodeForResource writes into the nil map), and its webhooks go with it.
        resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": OTHER_NODE, "labels": {NO_KOORDLET_LABEL: "true", NO_KRUISE_DAEMON_LABEL: "true"}},
            "status": {"capacity": resources, "allocatable": resources},
        }
        manifests = [
            node,
            *(pod(name, fake) for name, fake in FAKE_PODS.items()),
            pod(ON_OTHER_NODE, OTHER_NODE),
            pod(UNBOUND, None),
        ]
        for manifest in manifests:
            proc = subprocess.run(
                [str(sandbox.bin_dir / "kubectl"), "--kubeconfig", str(sandbox.kubeconfig), "create", "-f", "-"],
                input=json.dumps(manifest),
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr
        assert phases(sandbox) == dict.fromkeys(EVERY_POD, "Pending")
        yield
    finally:
        sandbox.kubectl(
            "delete", "pod", "-n", NS, "--ignore-not-found", "--grace-period=0", "--force", *EVERY_POD, check=False
        )
        sandbox.kubectl("delete", "node", "--ignore-not-found", OTHER_NODE, check=False)
        faults.heal("kwok-down", state_dir=sandbox.state_dir)
        # koord-manager deletes the extra node's NodeMetric once the node is gone: wait, before the next test looks
        # (github.com/koordinator-sh/koordinator@v1.6.0, pkg/slo-controller/nodemetric/nodemetric_controller.go).
        gone_by = time.monotonic() + 60
        while sandbox.kubectl("get", "nodemetric", OTHER_NODE, check=False).returncode == 0:
            assert time.monotonic() < gone_by, f"NodeMetric {OTHER_NODE} outlived its node"
            time.sleep(1)


@pytest.mark.usefixtures("kwok_down_with_pods")
def test_kwok_down_moves_exactly_the_fake_node_pods(runs: CheckRuns, sandbox: SandboxInfo) -> None:
    code, dry = runs.cli(config(runs, dry_run=True), JOB)
    assert (code, dry["status"]) == (0, "ok"), dry
    assert dry["summary"] == f"would move 2 Pending pod(s) on fake nodes to Running: {MOVED}"
    assert phases(sandbox) == dict.fromkeys(EVERY_POD, "Pending")  # the dry run moved nothing

    code, refused = runs.cli(_as_probe(runs), JOB)
    assert (code, refused["status"]) == (2, "error"), refused
    assert "HTTP 403" in refused["summary"]
    assert refused["reported"] is False
    assert phases(sandbox) == dict.fromkeys(EVERY_POD, "Pending")

    code, result = runs.cli(config(runs), JOB)
    assert (code, result["status"]) == (0, "ok"), result
    assert result["details"]["moved"] == [f"{NS}/{name}" for name in FAKE_PODS]
    assert result["summary"] == f"moved 2 Pending pod(s) on fake nodes to Running: {MOVED}"
    left_alone = result["details"]["left_alone"]
    assert left_alone["not_on_fake_nodes"] == 1, left_alone
    assert left_alone["unbound"] >= 1, left_alone
    assert left_alone["already_ready"] == 0, left_alone
    after = statuses(sandbox)
    assert {name: status.get("phase") for name, status in after.items()} == {
        **dict.fromkeys(FAKE_PODS, "Running"),
        ON_OTHER_NODE: "Pending",
        UNBOUND: "Pending",
    }
    for name, node in FAKE_PODS.items():
        moved = after[name]
        conditions = {c["type"]: c["status"] for c in moved["conditions"]}
        assert conditions == {"Initialized": "True", "Ready": "True", "ContainersReady": "True"}, (name, conditions)
        assert [(c["name"], c["ready"], "running" in c["state"]) for c in moved["containerStatuses"]] == [
            ("c", True, True)
        ], name
        assert moved["hostIP"] == internal_ip(sandbox, node), name
        assert "podIP" not in moved, name

    code, again = runs.cli(config(runs), JOB)
    assert (code, again["status"], again["details"]["moved"]) == (0, "ok", []), again
    # Pinged by the dry run and the two completed runs; never by the refused one.
    assert runs.receiver.pings_for(JOB) == 3


def _as_probe(runs: CheckRuns) -> Path:
    """The job's configuration, but run as the read-only probe: its writes must be refused."""
    path = config(runs)
    doc = yaml.safe_load(path.read_text())
    doc["checks"][JOB]["cluster_auth"]["path"] = str(runs.sandbox.probe_kubeconfig)
    probe = runs.directory / "as-probe.yaml"
    probe.write_text(yaml.safe_dump(doc))
    return probe
