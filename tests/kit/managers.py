"""The manager checks' captured states (`python -m kit.capture managers`), one `Captured` record each.

Every state was captured from the real managers the sandbox runs (kruise-manager v1.8.0; koord-manager,
koord-scheduler and koord-descheduler v1.6.0): `healthy`, then one per fault while it was active,
`<fault>_<system>` (`scaled_to_zero_kruise`, `lease_stolen_kruise`, `manager_down_kruise`, `manager_frozen_koord`,
`manager_down_koord`). Its answers are each manager pod's raw health through the pod proxy, keyed
`"<ns>/<pod> <path>"`; `serve` puts a state behind the kit's fake API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kit import capture_managers
from kit.captured import Captured
from kit.captured import load as load_captured
from kit.fake_cluster import FakeApiServer
from outpost.kube.paths import pod_proxy

MANAGERS_FIXTURES = capture_managers.OUT
State = Captured
STATES = (
    "healthy",
    "scaled_to_zero_kruise",
    "lease_stolen_kruise",
    "manager_down_kruise",
    "manager_frozen_koord",
    "manager_down_koord",
)


def load(name: str) -> Captured:
    return load_captured(MANAGERS_FIXTURES / f"{name}.json")


def serve(state: Captured, port: int = 8000) -> FakeApiServer:
    """The state's objects, and every captured health answer at its pod proxy path.

    An answer captured as none at all within the capture's 5 s (`ClusterTimeout`, e.g. a SIGSTOPped manager whose
    port accepts and never answers, the API server waiting on it) is served as a hang. Any other unanswered capture
    is refused rather than guessed at: e.g. `ClusterUnreachable` means the API server itself was not reached, which
    served on the one path would be blamed on the pod.
    """
    api = FakeApiServer().add_all(state.objects)
    for key, (status, body) in state.answers.items():
        target, _, path = key.partition(" ")
        namespace, _, pod = target.partition("/")
        proxied = pod_proxy(namespace, pod, port, path)
        if status is not None:
            api.respond(proxied, status, body)
        elif body.startswith("ClusterTimeout:"):
            api.hang(proxied)
        else:
            raise AssertionError(
                f"{state.name}: {key} was not answered when captured, for a reason the kit cannot serve: {body}"
            )
    return api


def each_state(expected: Mapping[str, tuple[Any, ...]]) -> pytest.MarkDecorator:
    """A test parametrized over the captured states with what it expects of each: `state_name` and the fields of
    `expected[state_name]` (`status`, `summary`, `errors`)."""
    return pytest.mark.parametrize(
        ("state_name", "status", "summary", "errors"),
        [(name, *case) for name, case in expected.items()],
        ids=list(expected),
    )
