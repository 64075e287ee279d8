"""E2e: what the sandbox's cheaper faults do, seen through the API server.

Whether each fault fails the checks it names, and what the real managers do under their faults, is
test_fault_catalogue_e2e.py's (one break per fault); this file proves the rest of the mechanism where it costs
seconds: the real koord-scheduler's view of a stuck gang, the stand-ins' answers, a DaemonSet leaving a node for
real, Priority and Fairness. A `finally: heal()` keeps one failing test from poisoning the next. The command line
is exercised once end to end.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from sandbox_http import LS_WEB, age, api, get_json

from outpost_sandbox import faults


def status_of(sb: Any, path: str, admin: bool = False) -> int:
    return api(sb, path, probe=not admin).status_code


def eventually(what: str, predicate: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s: {what}", pytrace=False)
        time.sleep(0.5)


def brk(sb: Any, name: str, target: str | None = None, **options: Any) -> None:
    faults.break_fault(name, target, sb.state_dir, **options)


def heal(sb: Any, name: str) -> None:
    assert faults.heal(name, state_dir=sb.state_dir), f"{name} was not active"


# ---- the real koord-scheduler ------------------------------------------------------------------------------------
def test_a_stuck_gang_as_koord_scheduler_sees_it(sb: Any) -> None:
    brk(sb, "podgroup-stuck")
    group = get_json(
        sb, "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups/outpost-fault-pending-gang"
    )
    assert group["status"]["phase"] == "Scheduling"
    members = get_json(sb, "/api/v1/namespaces/default/pods?labelSelector=app=outpost-fault-pending-gang")["items"]
    assert len(members) == 3
    for pod in members:
        (scheduled,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
        assert "outpost-fault-pending-gang" in scheduled["message"]
        assert age(scheduled["lastTransitionTime"]) > 3000  # backdated; kube-scheduler keeps it while unschedulable
    heal(sb, "podgroup-stuck")
    assert get_json(sb, "/api/v1/namespaces/default/pods?labelSelector=app=outpost-fault-pending-gang")["items"] == []


# ---- the stand-ins -----------------------------------------------------------------------------------------------
def test_kruise_daemon_down_through_node_proxy(sb: Any) -> None:
    node = get_json(sb, "/api/v1/nodes")["items"][0]["metadata"]["name"]
    path = f"/api/v1/nodes/{node}:10221/proxy/healthz"
    brk(sb, "backend-down", "kruise-daemon")
    assert status_of(sb, path, admin=True) >= 500
    heal(sb, "backend-down")
    assert status_of(sb, path, admin=True) == 200


def test_ls_workload_slow(sb: Any) -> None:
    brk(sb, "backend-slow", "ls-workload", delay_ms=1500)
    t = time.monotonic()
    assert status_of(sb, LS_WEB) == 200
    assert time.monotonic() - t >= 1.5
    heal(sb, "backend-slow")
    t = time.monotonic()
    assert status_of(sb, LS_WEB) == 200
    assert time.monotonic() - t < 1.0


@pytest.mark.parametrize(
    ("fault", "ns", "selector"),
    [
        ("koordlet-missing", "koordinator-system", "koord-app=koordlet"),
        ("kruise-daemon-missing", "kruise-system", "control-plane=daemon"),
    ],
)
def test_daemonset_leaves_a_node(sb: Any, fault: str, ns: str, selector: str) -> None:
    node = "kwok-node-1"

    def on_node() -> list[Any]:
        items: list[Any] = get_json(
            sb, f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}&fieldSelector=spec.nodeName={node}"
        )["items"]
        return items

    assert on_node()
    brk(sb, fault, node)
    assert not on_node()
    heal(sb, fault)
    assert on_node()


def test_nodemetric_stale_writes_only_koordlets_part(sb: Any) -> None:
    path = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/kwok-node-0"
    spec = get_json(sb, path)["spec"]
    brk(sb, "nodemetric-stale", "kwok-node-0")
    assert age(get_json(sb, path)["status"]["updateTime"]) > 300
    time.sleep(6)  # a refresh pass later it is still stale
    assert age(get_json(sb, path)["status"]["updateTime"]) > 300
    heal(sb, "nodemetric-stale")
    assert age(get_json(sb, path)["status"]["updateTime"]) < 60
    assert get_json(sb, path)["spec"] == spec  # koord-manager's spec, untouched


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


# ---- API server -------------------------------------------------------------------------------------------------
def test_apiserver_overload_429_for_the_probe_while_readyz_200(sb: Any) -> None:
    # A LIST the probe's generated RBAC allows (the node checks'), and one it does not: Priority and
    # Fairness rejects both before authorization while the fault is on.
    allowed, refused = "/api/v1/nodes?limit=1", "/api/v1/namespaces/default/secrets?limit=1"
    assert (status_of(sb, allowed), status_of(sb, refused)) == (200, 403)
    brk(sb, "apiserver-overload", "user:outpost-probe")
    codes = [status_of(sb, path) for _ in range(3) for path in (allowed, refused)]
    assert codes == [429] * 6
    assert status_of(sb, "/readyz") == 200  # health endpoints are exempt from APF
    assert status_of(sb, "/api/v1/pods?limit=1", admin=True) == 200  # system:masters is exempt
    heal(sb, "apiserver-overload")
    assert (status_of(sb, allowed), status_of(sb, refused)) == (200, 403)


# ---- command line -----------------------------------------------------------------------------------------------
def test_cli_break_and_heal(sb: Any) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "outpost_sandbox", *args, "--state-dir", str(sb.state_dir)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    out = run("break", "backend-500", "--target", "ls-workload")
    assert out.returncode == 0, out.stderr
    assert "should fail: ls-latency" in out.stdout
    assert status_of(sb, LS_WEB) in (500, 503)
    bad = run("break", "backend-500", "--target", "no-such-target")
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1
    assert "no-such-target" in bad.stderr
    out = run("heal")
    assert (out.returncode, out.stdout.strip()) == (0, "healed: backend-500 (ls-workload)")
    assert status_of(sb, LS_WEB) == 200
