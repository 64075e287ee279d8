"""What every fault family shares: the fault record type, the context a fault runs in, the
names of the objects faults touch, and the small helpers (time stamps, waiting, targets).

Guarantees: a `FaultContext` opens its API access lazily and `close()` releases it; `wait_for`
fails with `FaultError` naming what was awaited; `required_target` refuses a missing or unknown
--target with one line listing the choices.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outpost.errors import OutpostError
from outpost.kube import timestamps
from outpost.kube.paths import NODE_METRICS, object_path
from outpost.kube.timestamps import format_time
from outpost_sandbox import systems
from outpost_sandbox.backends.kube import Kube, SandboxApiError
from outpost_sandbox.poll import poll_until
from outpost_sandbox.procs import ProcessTable

NO_KOORDLET_LABEL = "outpost.sandbox/no-koordlet"
NO_KRUISE_DAEMON_LABEL = "outpost.sandbox/no-kruise-daemon"
APF_NAME = "outpost-sandbox-overload"
APF_LOAD_USER = "outpost-sandbox:apf-load"
DEFAULT_PROBE_SUBJECT = "user:outpost-probe"
FAULT_PREFIX = "outpost-fault"

# backend target -> the catalogue checks that read it
TARGET_CHECKS: dict[str, tuple[str, ...]] = {
    "koordlet": (),
    "kruise-daemon": ("kruise-daemon-coverage",),
    "ls-workload": ("ls-latency",),
}


class FaultError(OutpostError):
    """A fault could not be injected or healed."""


@dataclass
class FaultContext:
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


Apply = Callable[[FaultContext], dict[str, Any]]
Heal = Callable[[FaultContext, dict[str, Any]], None]


@dataclass(frozen=True)
class Fault:
    name: str
    checks: tuple[str, ...]
    help: str
    apply: Apply
    heal: Heal
    target_help: str = ""
    checks_by_target: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The checks this fault fails when aimed at one target (a backend, a system, a Deployment); a
    target not listed here fails all of `checks`."""

    def checks_for(self, target: str | None) -> tuple[str, ...]:
        """The catalogue checks that must fail while this fault is active on `target`."""
        if target is not None and target in self.checks_by_target:
            return self.checks_by_target[target]
        return self.checks


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def rfc3339(t: dt.datetime, micro: bool = False) -> str:
    """As the API server writes times (`Time`, or `MicroTime` with `micro`)."""
    return format_time(t, micro)


def age_seconds(timestamp: object) -> float:
    """Seconds since an RFC 3339 time from an object; a missing one is infinitely old (never fresh)."""
    age = timestamps.age_seconds(str(timestamp) if timestamp else None, utc_now())
    return math.inf if age is None else age


def wait_for(what: str, timeout: float, predicate: Callable[[], bool]) -> None:
    poll_until(what, timeout, predicate, retry_on=(SandboxApiError,), fail=FaultError)


def required_target(
    ctx: FaultContext, choices: list[str] | tuple[str, ...] | None, what: str, default: str | None = None
) -> str:
    target = ctx.target or default
    if target is None:
        raise FaultError(f"--target {what} is required (one of: {', '.join(choices or [])})")
    if choices is not None and target not in choices:
        raise FaultError(f"--target {target!r}: not a {what} (one of: {', '.join(choices)})")
    return target


def fake_nodes(ctx: FaultContext) -> list[str]:
    """The KWOK fake nodes (the process node, which runs the managers, is not one)."""
    return sorted(
        n["metadata"]["name"]
        for n in ctx.kube.get("/api/v1/nodes")["items"]
        if (n["metadata"].get("annotations") or {}).get("kwok.x-k8s.io/node") == "fake"
    )


def node_target(ctx: FaultContext) -> str:
    nodes = fake_nodes(ctx)
    if not nodes:
        raise FaultError("no nodes in the sandbox")
    return required_target(ctx, nodes, "node", default=nodes[0])


# ---- the process node's kubelet ----------------------------------------------------------------------
def hold_on_process_node(ctx: FaultContext, kind: str, namespace: str, selector: str, on: bool) -> None:
    """Add (or remove) the pods of `namespace` matching `selector` to the process node kubelet's `kind` list
    (crashloop: killed and kept in CrashLoopBackOff; frozen: SIGSTOP); it acts only on its own node's pods."""
    data = systems.process_node_faults(ctx.state_dir)
    entries = [e for e in data.get(kind) or [] if e.get("selector") != selector or e.get("namespace") != namespace]
    if on:
        entries.append({"namespace": namespace, "selector": selector})
    data[kind] = entries
    systems.write_process_node_faults(ctx.state_dir, data)


def pod_ready(pod: dict[str, Any] | None) -> bool:
    conditions = ((pod or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_process_state(state_dir: Path, pod: dict[str, Any]) -> str:
    """The kernel's state letter of the process node's container process for `pod` (S/R alive, T stopped), ''
    when none runs."""
    table = ProcessTable(state_dir / "kubelet" / "run", state_dir / "logs" / "pods")
    pid = table.pid(f"{pod['metadata']['namespace']}_{pod['metadata']['name']}")
    try:
        stat = Path(f"/proc/{pid}/stat").read_text() if pid else ""
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2] if stat else ""


# ---- NodeMetrics ---------------------------------------------------------------------------------------
def nodemetric_age(ctx: FaultContext, node: str) -> float:
    found = ctx.kube.get(object_path(NODE_METRICS, node), ok_missing=True) or {}
    return age_seconds((found.get("status") or {}).get("updateTime"))


def backdate_nodemetric(ctx: FaultContext, node: str, seconds: float) -> None:
    """Move `node`'s last koordlet report back by `seconds`: only the time moves; the report stays, as a koordlet
    that stopped leaves it. (An apply of the time alone would drop `status.nodeMetric`, which the reporter owns, and
    koord-manager v1.6.0 panics on a NodeMetric status without it: noderesource plugins/midresource/plugin.go
    calculate.)"""
    ctx.kube.merge_patch(
        f"{object_path(NODE_METRICS, node)}/status",
        {"status": {"updateTime": rfc3339(utc_now() - dt.timedelta(seconds=seconds))}},
    )
