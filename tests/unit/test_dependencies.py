"""The dependency graph (`outpost.registry.DEPENDS_ON`): its validation and the dependants it gives."""

from __future__ import annotations

import pytest

from outpost import registry
from outpost.registry import DependsOn


def edges(*parents: str) -> tuple[DependsOn, ...]:
    return tuple(DependsOn(parent, f"depends on {parent}") for parent in parents)


def test_the_shipped_graph_is_usable() -> None:
    assert registry.dependency_problems() == []


@pytest.mark.parametrize(
    ("graph", "problems"),
    [
        pytest.param({"koord-webhook": edges("koord-manager-health")}, [], id="one edge"),
        pytest.param(
            {"koord-webhook": edges("koord-manager-health"), "koord-manager-health": edges("koord-webhook")},
            ["DEPENDS_ON: cycle koord-manager-health -> koord-webhook -> koord-manager-health"],
            id="two-node cycle, named once",
        ),
        pytest.param(
            {
                "koord-webhook": edges("admission-dry-run"),
                "admission-dry-run": edges("leader-leases"),
                "leader-leases": edges("koord-webhook"),
            },
            ["DEPENDS_ON: cycle admission-dry-run -> leader-leases -> koord-webhook -> admission-dry-run"],
            id="three-node cycle",
        ),
        pytest.param(
            {"koord-webhook": edges("koord-webhook")}, ["DEPENDS_ON['koord-webhook']: depends on itself"], id="self"
        ),
        pytest.param(
            {"koord-webhook": edges("no-such-check")},
            ["DEPENDS_ON['koord-webhook']: parent 'no-such-check' is not a check of the registry"],
            id="unknown parent",
        ),
        pytest.param(
            {"no-such-check": edges("apiserver-health")},
            ["DEPENDS_ON['no-such-check']: not a check or job of the registry"],
            id="unknown child",
        ),
        pytest.param(
            {"koord-webhook": edges("apiserver-health", "apiserver-health")},
            ["DEPENDS_ON['koord-webhook']: parent 'apiserver-health' given twice"],
            id="repeated parent",
        ),
        pytest.param(
            {"koord-webhook": (DependsOn("apiserver-health", "  "),)},
            ["DEPENDS_ON['koord-webhook']: parent 'apiserver-health' has no reason"],
            id="no reason",
        ),
    ],
)
def test_dependency_problems(graph: dict[str, tuple[DependsOn, ...]], problems: list[str]) -> None:
    assert registry.dependency_problems(graph) == problems


@pytest.mark.parametrize(
    ("parent", "held"),
    [
        pytest.param("apiserver-health", [n for n in registry.names() if n != "apiserver-health"], id="api: all"),
        pytest.param(
            "koord-manager-health", ["koord-webhook", "leader-leases", "admission-dry-run"], id="koord-manager: 3"
        ),
        pytest.param(
            "kruise-manager-health",
            ["kruise-webhook", "kruise-manager-replicas", "leader-leases", "admission-dry-run"],
            id="kruise-manager",
        ),
        pytest.param("koord-webhook", ["admission-dry-run"], id="webhook"),
        pytest.param("koordlet-coverage", ["nodemetric-freshness"], id="koordlet"),
        pytest.param("admission-dry-run", [], id="a leaf holds nothing"),
    ],
)
def test_dependants_are_transitive_in_catalogue_order(parent: str, held: list[str]) -> None:
    assert registry.dependants(parent) == held


def test_every_check_but_the_api_server_depends_on_it() -> None:
    """The API server is every check's way in: each names it as a parent, so its outage pages once."""
    roots = [name for name in registry.names() if not registry.parents(name)]
    assert roots == ["apiserver-health"]
    assert all(
        "apiserver-health" in {edge.parent for edge in registry.parents(name)}
        for name in registry.names()
        if name != "apiserver-health"
    )


def test_upstream_reasons_cite_their_release() -> None:
    """An edge that is an upstream fact says where it was read (module@version file), as every default does."""
    cited = [edge for edges in registry.DEPENDS_ON.values() for edge in edges if "manager" in edge.parent]
    assert cited
    assert all("@v1.6.0 " in edge.reason or "@v1.8.0 " in edge.reason or "charts@" in edge.reason for edge in cited)
