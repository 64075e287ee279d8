"""The catalogue: one explicit, ordered table of every check Outpost ships, imported only when asked for.

Explicit (no decorators, no scanning) so adding a check is one reviewed line, and every other list of checks is
generated from it (`outpost.tooling.catalogue`). Lazy, because a function runs one check: its cold start imports
that check's module and the core only; `checks()`/`jobs()` import them all for commands that need every check.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Final

from outpost.check import CheckSpec

_CHECK_MODULES: Final[tuple[tuple[str, str], ...]] = (
    ("koord-manager-health", "koord_manager_health"),
    ("koord-webhook", "koord_webhook"),
    ("koordlet-coverage", "koordlet_coverage"),
    ("nodemetric-freshness", "nodemetric_freshness"),
    ("ls-latency", "ls_latency"),
    ("be-eviction-rate", "be_eviction_rate"),
    ("gang-scheduling", "gang_scheduling"),
    ("node-utilization", "node_utilization"),
    ("apiserver-health", "apiserver_health"),
    ("apiserver-triage", "apiserver_triage"),
    ("apiserver-latency", "apiserver_latency"),
    ("apiserver-cert-expiry", "apiserver_cert_expiry"),
    ("kwok-node-consistency", "kwok_node_consistency"),
    ("kruise-manager-health", "kruise_manager_health"),
    ("kruise-webhook", "kruise_webhook"),
    ("kruise-daemon-coverage", "kruise_daemon_coverage"),
    ("kruise-manager-replicas", "kruise_manager_replicas"),
    ("leader-leases", "leader_leases"),
    ("admission-dry-run", "admission_dry_run"),
    ("webhook-cert-expiry", "webhook_cert_expiry"),
)
"""The catalogue's checks in docs/checks.md's order: (check name, module under `outpost.checks`)."""

_JOB_MODULES: Final[tuple[tuple[str, str], ...]] = (("kwok-pod-reconciler", "kwok_pod_reconciler"),)
"""Jobs are not checks of the catalogue (they change the cluster) but run exactly like one: configured,
scheduled, deployed and reported the same way, under `outpost run NAME`."""

_MODULES: Final[dict[str, str]] = dict(_CHECK_MODULES + _JOB_MODULES)


@dataclass(frozen=True)
class DependsOn:
    """One edge of the dependency graph: while `parent` fails, this check's alert says nothing new."""

    parent: str
    reason: str
    """Why, in one line: the upstream coupling, cited as `module@version file` where it is upstream's."""


_KOORD: Final = "github.com/koordinator-sh/koordinator@v1.6.0"
_KRUISE: Final = "github.com/openkruise/kruise@v1.8.0"
_API: Final = DependsOn(
    "apiserver-health",
    "it observes the cluster through the API server (`outpost.cluster` has no other way in): with the API "
    "server down it can only say `error`",
)
_API_SERVING: Final = DependsOn(
    "apiserver-triage",
    "it reads through the same API server, whose real requests apiserver-triage times: an API server that is live "
    "and ready but rejects or stalls requests (API Priority and Fairness, a saturated etcd) fails only "
    "apiserver-triage (`overloaded`, `not-ready`), and leaves this check timing out with `error`",
)
_KOORD_MANAGER: Final = DependsOn(
    "koord-manager-health",
    f"koord-manager serves the webhook in its own process, and its readyz includes `webhook-ready` ({_KOORD} "
    "cmd/koord-manager/main.go)",
)
_KRUISE_MANAGER: Final = DependsOn(
    "kruise-manager-health",
    f"kruise-manager serves the webhook in its own process, and its readyz includes `webhook-ready` ({_KRUISE} "
    "main.go)",
)

DEPENDS_ON: Final[dict[str, tuple[DependsOn, ...]]] = {
    "koord-manager-health": (_API, _API_SERVING),
    "koord-webhook": (_API, _API_SERVING, _KOORD_MANAGER),
    "koordlet-coverage": (_API, _API_SERVING),
    "nodemetric-freshness": (
        _API,
        _API_SERVING,
        DependsOn(
            "koordlet-coverage",
            f"each node's koordlet writes its NodeMetric status ({_KOORD} "
            "pkg/koordlet/statesinformer/impl/states_nodemetric.go, `UpdateStatus`): no koordlet, no fresh report",
        ),
    ),
    "ls-latency": (_API, _API_SERVING),
    "be-eviction-rate": (_API, _API_SERVING),
    "gang-scheduling": (_API, _API_SERVING),
    "node-utilization": (_API, _API_SERVING),
    "apiserver-triage": (_API,),
    "apiserver-latency": (_API, _API_SERVING),
    "apiserver-cert-expiry": (
        DependsOn(
            "apiserver-health",
            "it reads the serving certificate from the API server's own TLS handshake: with the API server down "
            "it can only say `error`",
        ),
    ),
    "kwok-node-consistency": (_API, _API_SERVING),
    "kruise-manager-health": (_API, _API_SERVING),
    "kruise-webhook": (_API, _API_SERVING, _KRUISE_MANAGER),
    "kruise-daemon-coverage": (_API, _API_SERVING),
    "kruise-manager-replicas": (
        _API,
        _API_SERVING,
        DependsOn(
            "kruise-manager-health",
            "a manager pod is ready only while its readyz answers 200, the chart's readinessProbe "
            "(openkruise/charts@38153b0939bc8a240a5c841761095159a0f29ed3 versions/kruise/1.8.0/templates/"
            "manager.yaml): a failing readyz lowers readyReplicas",
        ),
    ),
    "leader-leases": (
        _API,
        _API_SERVING,
        DependsOn(
            "koord-manager-health",
            f"koord-manager renews the `koordinator-manager` Lease in the process whose readyz that checks "
            f"({_KOORD} cmd/koord-manager/main.go, LeaderElectionID)",
        ),
        DependsOn(
            "kruise-manager-health",
            f"kruise-manager renews the `kruise-manager` Lease in the process whose readyz that checks ({_KRUISE} "
            "main.go, --leader-election-id)",
        ),
    ),
    "admission-dry-run": (
        _API,
        _API_SERVING,
        DependsOn("koord-webhook", "its Koordinator pod is mutated by the webhook koord-webhook watches"),
        DependsOn("kruise-webhook", "its OpenKruise pod is admitted by the webhook kruise-webhook watches"),
    ),
    "webhook-cert-expiry": (_API, _API_SERVING),
    "kwok-pod-reconciler": (_API, _API_SERVING),
}
"""What each check and job depends on (no entry: a root, such as apiserver-health). While a parent's run fails,
its dependants' notifications are held back (`outpost.holdback`, docs/contracts.md "Hold-back"); the graph is
validated by `dependency_problems` and printed in docs/checks.md."""


def parents(name: str) -> tuple[DependsOn, ...]:
    """The checks `name` depends on directly, with the reason of each (imports nothing)."""
    return DEPENDS_ON.get(name, ())


def dependants(name: str) -> list[str]:
    """Every check and job that depends on `name`, directly or through others, in catalogue order.

    Transitive on purpose: a koord-manager outage fails koord-webhook and through it admission-dry-run; holding
    only the direct dependants would leave admission-dry-run to page for a cause already paged for."""
    found: set[str] = set()
    frontier = [name]
    while frontier:
        current = frontier.pop()
        for child, edges in DEPENDS_ON.items():
            if child not in found and any(edge.parent == current for edge in edges):
                found.add(child)
                frontier.append(child)
    found.discard(name)
    return [check for check in names() if check in found]


def dependency_problems(graph: dict[str, tuple[DependsOn, ...]] | None = None) -> list[str]:
    """Every reason the dependency graph is unusable: an unknown check or parent, a self-edge, a repeated
    parent, an empty reason, a cycle (each named once, as `a -> b -> a`)."""
    graph = DEPENDS_ON if graph is None else graph
    known = set(names())
    problems: list[str] = []
    for child, edges in graph.items():
        if child not in known:
            problems.append(f"DEPENDS_ON[{child!r}]: not a check or job of the registry")
        seen: set[str] = set()
        for edge in edges:
            if edge.parent not in known:
                problems.append(f"DEPENDS_ON[{child!r}]: parent {edge.parent!r} is not a check of the registry")
            if edge.parent == child:
                problems.append(f"DEPENDS_ON[{child!r}]: depends on itself")
            if edge.parent in seen:
                problems.append(f"DEPENDS_ON[{child!r}]: parent {edge.parent!r} given twice")
            if not edge.reason.strip():
                problems.append(f"DEPENDS_ON[{child!r}]: parent {edge.parent!r} has no reason")
            seen.add(edge.parent)
    problems += _cycles(graph)
    return problems


def _cycles(graph: dict[str, tuple[DependsOn, ...]]) -> list[str]:
    """One line per cycle of `graph`, `a -> b -> a` (a depends on b), each cycle once from its least name."""
    found: dict[tuple[str, ...], None] = {}
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycle = path[path.index(node) :]
            first = cycle.index(min(cycle))
            found.setdefault(tuple(cycle[first:] + cycle[:first]), None)
            return
        if node in done:
            return
        for edge in graph.get(node, ()):
            if edge.parent != node:  # a self-edge is named on its own
                visit(edge.parent, [*path, node])
        done.add(node)

    for node in graph:
        visit(node, [])
    return [f"DEPENDS_ON: cycle {' -> '.join([*cycle, cycle[0]])}" for cycle in found]


def names() -> list[str]:
    """Every check's and job's name, in catalogue order (imports no check)."""
    return list(_MODULES)


def module(name: str) -> str:
    """The module defining check or job `name`, e.g. `outpost.checks.koord_webhook` (imports nothing); KeyError
    with the known names otherwise."""
    try:
        return f"outpost.checks.{_MODULES[name]}"
    except KeyError:
        raise KeyError(f"unknown check {name!r} (known: {', '.join(names())})") from None


def get(name: str) -> CheckSpec[Any, Any]:
    """The check called `name` (its module imported now if it was not yet); KeyError with the known names
    otherwise."""
    defined_in = module(name)
    spec: CheckSpec[Any, Any] = importlib.import_module(defined_in).CHECK
    if spec.name != name:  # a row pointing at the wrong module must not run another check under this name
        raise RuntimeError(f"registry row {name!r} names module {defined_in!r}, whose check is {spec.name!r}")
    return spec


def checks() -> tuple[CheckSpec[Any, Any], ...]:
    """Every check of the catalogue, in order (imports them all)."""
    return tuple(get(name) for name, _ in _CHECK_MODULES)


def jobs() -> tuple[CheckSpec[Any, Any], ...]:
    """Every job (imports them all)."""
    return tuple(get(name) for name, _ in _JOB_MODULES)
