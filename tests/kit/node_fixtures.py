"""Captured sandbox output for the node checks (`kit/capture_nodes.py`), by state.

A state is `healthy` or what a fault left (`koordlet-missing`, `node-lease-stale`,
`kwok-down-first-run`, `kwok-down-after-lease-duration`, ...). Each holds the documents the node
checks read, exactly as the API server returned them (managedFields dropped), and `meta.json`'s
`captured_at`: the `now` to evaluate them with.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from kit.fake_cluster import FakeApiServer
from outpost.kube.nodes import NodeFacts, UsageSample, facts_of, usage_from_nodemetric
from outpost.kube.timestamps import parse_time

NODE_FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "nodes"
DOCUMENTS = (
    "nodes",
    "node_leases",
    "koordlet_ds",
    "koordlet_pods",
    "kruise_daemon_ds",
    "kruise_daemon_pods",
    "nodemetrics",
)


def states() -> list[str]:
    return sorted(p.name for p in NODE_FIXTURES.iterdir() if p.is_dir())


def document(state: str, name: str) -> Any:
    """One captured document (a list of items, an object, or None for an absent object)."""
    return json.loads((NODE_FIXTURES / state / f"{name}.json").read_text())


def captured_at(state: str) -> datetime:
    moment = parse_time(document(state, "meta")["captured_at"])
    assert moment is not None
    return moment


def facts_and_usage(
    state: str, metrics: list[dict[str, Any]] | None = None, nodes: list[dict[str, Any]] | None = None
) -> tuple[tuple[NodeFacts, ...], tuple[UsageSample, ...]]:
    """What the NodeMetric checks evaluate: the state's nodes (or `nodes`) as facts, its NodeMetrics (or
    `metrics`) as usage samples."""
    return (
        tuple(facts_of(n) for n in (nodes if nodes is not None else document(state, "nodes"))),
        tuple(usage_from_nodemetric(m) for m in (metrics if metrics is not None else document(state, "nodemetrics"))),
    )


def healthz(state: str) -> dict[str, dict[str, Any]]:
    """kruise-daemon `/healthz:10221` through the node proxy, per node: {status, body}."""
    answers: dict[str, dict[str, Any]] = document(state, "healthz")
    return answers


def serve(state: str, api: FakeApiServer | None = None) -> FakeApiServer:
    """A fake API server holding every object of `state`."""
    return serve_documents({name: document(state, name) for name in DOCUMENTS}, api)


def serve_documents(documents: dict[str, Any], api: FakeApiServer | None = None) -> FakeApiServer:
    """A fake API server holding a state's documents (each a list of objects, a DaemonSet, or None: absent)."""
    api = api or FakeApiServer()
    for doc in documents.values():
        if doc is None:
            continue
        if isinstance(doc, dict):
            api.add({"kind": "DaemonSet", "apiVersion": "apps/v1", **doc})
        else:
            api.add_all(doc)
    return api
