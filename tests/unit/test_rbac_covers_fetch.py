"""Every request a check's `fetch` sends is one its declaration (`CheckSpec.access`) grants.

Each enabled check of the local environment runs its real `fetch` against the kit's FakeApiServer holding the
captured healthy sandbox (and the states where fallbacks fire), every request is recorded, turned into the
attributes the API server authorizes (`outpost.kube.access.of_path`), and must be covered by what the check
declared for the same params: a request the declaration forgot would be a 403 (`error`) under the generated
RBAC, which the e2e minimality and sufficiency tests would only show on the sandbox.
"""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from kit.captured import SANDBOX, load
from kit.fake_cluster import FakeApiServer, fake_cluster
from outpost import registry
from outpost.cluster import Deadline
from outpost.config import environment_file
from outpost.kube import access
from outpost.settings import check_params, load_settings

SETTINGS = load_settings(environment_file("local"))
CHECKS = [name for name in SETTINGS.enabled_checks() if not registry.get(name).writes]
TLS_FIRST = {"apiserver-triage"}  # a TLS handshake to the fake's unresolvable host fails first: nothing is sent
_VERBS: dict[str, access.Verb] = {"POST": "create", "PATCH": "patch"}
HEALTHY = load(SANDBOX / "healthy.json")


def requests_of(name: str, api: FakeApiServer) -> list[access.Access]:
    spec = registry.get(name)
    params = check_params(SETTINGS, name)
    with fake_cluster(api, deadline=Deadline(30)) as cluster, contextlib.suppress(Exception):
        spec.fetch(cluster, params)  # what it concluded does not matter here, only what it asked
    sent: list[access.Access] = []
    for request in api.requests:
        attributes = access.of_path(request.path, "list")
        if isinstance(attributes, access.ResourceAccess) and request.method in _VERBS:
            attributes = dataclasses.replace(attributes, verb=_VERBS[request.method])
        sent.append(attributes)
    return sent


@pytest.mark.parametrize("name", CHECKS)
def test_what_fetch_sends_is_declared(name: str) -> None:
    declared = list(registry.get(name).access(check_params(SETTINGS, name)))
    for state in ("healthy", "empty"):
        api = FakeApiServer()
        if state == "healthy":
            api.add_all(HEALTHY.objects)
        sent = requests_of(name, api)
        undeclared = [item.describe() for item in sent if not access.covered(item, declared)]
        assert not undeclared, f"{name} ({state}) sent what it does not declare: {undeclared}"
        if state == "healthy" and declared and name not in TLS_FIRST:
            assert sent, f"{name} sent nothing on the healthy fixture"


def test_covered_matches_verb_resource_namespace_and_name() -> None:
    declared: list[access.Access] = [
        access.ResourceAccess("apps", "deployments", "get", "ns", ("d",)),
        access.ResourceAccess("", "pods", "list", None),
        access.NonResourceAccess("/metrics"),
    ]
    assert access.covered(access.of_path("/apis/apps/v1/namespaces/ns/deployments/d"), declared)
    assert not access.covered(access.of_path("/apis/apps/v1/namespaces/ns/deployments/e"), declared)
    assert not access.covered(access.of_path("/apis/apps/v1/namespaces/other/deployments/d"), declared)
    assert not access.covered(access.of_path("/apis/apps/v1/namespaces/ns/deployments", "list"), declared)
    assert access.covered(access.of_path("/api/v1/namespaces/x/pods", "list"), declared)
    assert not access.covered(access.of_path("/api/v1/namespaces/x/pods/p"), declared)
    assert access.covered(access.of_path("/metrics"), declared)
    assert access.covered(access.of_path("/version"), declared)  # public
    assert not access.covered(access.of_path("/metrics/slis"), declared)
