"""koord-webhook and kruise-webhook over every webhook state captured from the sandbox: the real `fetch` through the
real `Cluster` (fake API server), then `evaluate`.

The table is what the catalogue promises: each system's check fails on its own backend down/500/hang and on its
configurations deleted, names the object, and ignores the other system's faults. TLS faults and a webhook that
stops mutating are invisible to a health endpoint (the API server's service proxy does not verify the backend's
certificate, and /healthz does not mutate anything): those are admission-dry-run's, and the table says so.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kit import NOW, FakeApiServer, fake_cluster
from kit.webhook_fixtures import STATES, objects, serve
from outpost.check import CheckSpec
from outpost.checks import koord_webhook, kruise_webhook
from outpost.cluster import Deadline
from outpost.errors import ClusterError
from outpost.kube.paths import ENDPOINT_SLICES, ENDPOINTS, MUTATING_WEBHOOKS, SERVICES, object_path, service_proxy
from outpost.result import Result, Status

KOORD_HEALTHZ = "service koordinator-system/koordinator-webhook-service https:443/healthz"
KRUISE_HEALTHZ = "service kruise-system/kruise-webhook-service https:443/healthz"
OK: tuple[Status, str] = (Status.OK, "")

# state -> (koord-webhook, kruise-webhook): status and a piece of the first error line
EXPECTED: dict[str, tuple[tuple[Status, str], tuple[Status, str]]] = {
    "healthy": (OK, OK),
    "backend-down@koord-webhook": ((Status.FAILED, f"{KOORD_HEALTHZ}: HTTP 503 (error trying to reach service"), OK),
    "backend-500@koord-webhook": ((Status.FAILED, f"{KOORD_HEALTHZ}: HTTP 500 'internal server error' (want 200)"), OK),
    "backend-hang@koord-webhook": ((Status.FAILED, f"{KOORD_HEALTHZ}: no answer within 5 s"), OK),
    "backend-wrong-body@koord-webhook": (OK, OK),  # judged by status code (upstream's body is empty)
    "backend-tls-bad-ca@koord-webhook": (OK, OK),  # the service proxy does not verify the backend's certificate
    "backend-tls-expired@koord-webhook": (OK, OK),
    "webhook-no-mutate@koord-webhook": (OK, OK),
    "backend-down@kruise-webhook": (OK, (Status.FAILED, f"{KRUISE_HEALTHZ}: HTTP 503 (error trying to reach service")),
    "backend-500@kruise-webhook": (OK, (Status.FAILED, f"{KRUISE_HEALTHZ}: HTTP 500")),
    "backend-hang@kruise-webhook": (OK, (Status.FAILED, f"{KRUISE_HEALTHZ}: no answer within 5 s")),
    "backend-wrong-body@kruise-webhook": (OK, OK),
    "backend-tls-bad-ca@kruise-webhook": (OK, OK),
    "backend-tls-expired@kruise-webhook": (OK, OK),
    "webhook-no-mutate@kruise-webhook": (OK, OK),
    # Koordinator's pod webhook on failurePolicy Fail: the health endpoint tells the same as with Ignore
    "backend-down@koord-webhook+failurePolicy=Fail": (
        (Status.FAILED, f"{KOORD_HEALTHZ}: HTTP 503 (error trying to reach service"),
        OK,
    ),
    "backend-hang@koord-webhook+failurePolicy=Fail": ((Status.FAILED, f"{KOORD_HEALTHZ}: no answer within 5 s"), OK),
    "backend-tls-bad-ca@koord-webhook+failurePolicy=Fail": (OK, OK),
    "webhook-config-deleted@koordinator": (
        (
            Status.FAILED,
            "mutatingwebhookconfiguration koordinator-mutating-webhook-configuration: not found "
            "(want webhooks calling service koordinator-system/koordinator-webhook-service:443)",
        ),
        OK,
    ),
    "webhook-config-deleted@kruise": (
        OK,
        (Status.FAILED, "mutatingwebhookconfiguration kruise-mutating-webhook-configuration: not found"),
    ),
}


def run(check: CheckSpec[Any, Any], api: FakeApiServer, **params: Any) -> Result:
    p = check.params(**params)
    with fake_cluster(api, deadline=Deadline(20)) as cluster:
        data = check.fetch(cluster, p)
    return check.evaluate(data, p, NOW)


def steps(result: Result) -> list[tuple[str, str]]:
    """Each error line's next step as (failure class, command)."""
    assert len(result.next_steps) == len(result.errors)
    return [(step.failure, step.command) for step in result.next_steps]


def test_every_captured_state_has_an_expectation() -> None:
    assert sorted(EXPECTED) == STATES


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("index", [0, 1], ids=["koord-webhook", "kruise-webhook"])
def test_captured_states(state: str, index: int) -> None:
    check = (koord_webhook.CHECK, kruise_webhook.CHECK)[index]
    status, first_error = EXPECTED[state][index]
    result = run(check, serve(state))
    assert result.status is status, result.errors
    if status is Status.OK:
        assert result.errors == []
        assert "answers https:443/healthz (2 ready endpoint(s))" in result.summary
    else:
        assert first_error in result.errors[0]
        assert result.summary.startswith(("koordinator webhook: ", "openkruise webhook: "))
        failure, command = steps(result)[0]
        namespace, service = (
            ("koordinator-system", "koordinator-webhook-service"),
            ("kruise-system", "kruise-webhook-service"),
        )[index]
        if "config-deleted" in state:
            # the configuration is gone: the command lists those left, and the Service's endpoints, still ready
            assert (failure, command) == (
                "configuration-missing",
                f"kubectl get mutatingwebhookconfiguration && kubectl -n {namespace} get endpointslices "
                f"-l kubernetes.io/service-name={service}",
            )
        else:
            assert failure == "not-answering"
            assert command.startswith(
                f"kubectl -n {namespace} get endpointslices -l kubernetes.io/service-name={service} -o wide && "
            )
            manager = ("koord-manager", "kruise-controller-manager")[index]
            assert result.next_steps[0].see == f"kubectl -n {namespace} logs deployment/{manager} --tail=200"


def test_configurations_deleted_names_each_one() -> None:
    result = run(koord_webhook.CHECK, serve("webhook-config-deleted@koordinator"))
    assert [line.split(":")[0] for line in result.errors] == [
        "mutatingwebhookconfiguration koordinator-mutating-webhook-configuration",
        "validatingwebhookconfiguration koordinator-validating-webhook-configuration",
    ]
    assert "(+1 more)" in result.summary
    assert [c["found"] for c in result.details["configurations"]] == [False, False]


def test_healthy_details_name_the_webhooks_and_endpoints() -> None:
    result = run(kruise_webhook.CHECK, serve("healthy"))
    assert result.details["endpoints"]["source"] == "endpointslices"
    assert len(result.details["endpoints"]["ready"]) == 2
    webhooks = {c["name"]: [w["name"] for w in c["webhooks"]] for c in result.details["configurations"]}
    assert webhooks == {
        "kruise-mutating-webhook-configuration": ["mpod.kb.io"],
        "kruise-validating-webhook-configuration": ["vpod.kb.io"],
    }
    assert result.details["health"]["status_code"] == 200


def test_fetch_reads_only_what_it_judges() -> None:
    api = serve("healthy")
    run(koord_webhook.CHECK, api)
    ns, svc = "koordinator-system", "koordinator-webhook-service"
    paths = [(r.method, r.path) for r in api.requests]
    assert paths == [
        ("GET", service_proxy(ns, svc, 443, "/healthz", "https")),
        ("GET", object_path(SERVICES, svc, ns)),
        ("GET", object_path(MUTATING_WEBHOOKS, "koordinator-mutating-webhook-configuration")),
        (
            "GET",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
            "koordinator-validating-webhook-configuration",
        ),
        ("GET", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"),
    ]
    assert api.requests[-1].param("labelSelector") == f"kubernetes.io/service-name={svc}"


def _without(state: str, kind: str, name_prefix: str) -> list[dict[str, Any]]:
    return [o for o in objects(state) if not (o["kind"] == kind and o["metadata"]["name"].startswith(name_prefix))]


def _serve_objects(objs: list[dict[str, Any]]) -> FakeApiServer:
    api = serve("healthy")
    api.objects.clear()
    return api.add_all(objs)


def test_no_endpointslice_falls_back_to_endpoints() -> None:
    api = _serve_objects(_without("healthy", "EndpointSlice", "kruise-webhook-service"))
    result = run(kruise_webhook.CHECK, api)
    assert result.status is Status.OK
    assert result.details["endpoints"]["source"] == "endpoints"
    assert object_path(ENDPOINTS, "kruise-webhook-service", "kruise-system") in [r.path for r in api.requests]


def test_no_endpoints_at_all_is_failed() -> None:
    objs = _without("healthy", "EndpointSlice", "kruise-webhook-service")
    objs = [o for o in objs if not (o["kind"] == "Endpoints" and o["metadata"]["name"] == "kruise-webhook-service")]
    result = run(kruise_webhook.CHECK, _serve_objects(objs))
    assert result.status is Status.FAILED
    assert result.errors == [
        "service kruise-system/kruise-webhook-service: observed 0 ready endpoints "
        "(no EndpointSlice or Endpoints) (want >= 1 ready endpoint)"
    ]
    ((failure, command),) = steps(result)
    assert failure == "no-ready-endpoints"
    assert command.startswith("kubectl -n kruise-system describe service kruise-webhook-service && ")


def test_endpoints_not_ready_are_counted_apart() -> None:
    objs = copy.deepcopy(objects("healthy"))
    for obj in objs:
        if obj["kind"] == "EndpointSlice" and obj["metadata"]["name"].startswith("koordinator-webhook-service"):
            for endpoint in obj["endpoints"]:
                endpoint["conditions"]["ready"] = False
    result = run(koord_webhook.CHECK, _serve_objects(objs))
    assert result.status is Status.FAILED
    assert result.errors == [
        "service koordinator-system/koordinator-webhook-service: observed 0 ready endpoints "
        "(EndpointSlices, 2 not ready) (want >= 1 ready endpoint)"
    ]
    assert [failure for failure, _ in steps(result)] == ["no-ready-endpoints"]


def test_service_missing_is_failed_and_named() -> None:
    objs = [o for o in objects("healthy") if o["kind"] != "Service"]
    result = run(koord_webhook.CHECK, _serve_objects(objs))
    assert result.status is Status.FAILED
    assert (
        "service koordinator-system/koordinator-webhook-service: not found (want the webhook Service, port 443)"
        in result.errors
    )
    assert ("service-missing", "kubectl -n koordinator-system get services -o wide") in steps(result)


def test_tutorial_port_is_named_when_the_service_does_not_expose_it() -> None:
    # the tutorial's 9443: the Service exposes 443 only, and the configurations call 443
    result = run(kruise_webhook.CHECK, serve("healthy"), port=9443)
    assert result.status is Status.FAILED
    assert "service kruise-system/kruise-webhook-service: observed ports [443] (want port 9443)" in result.errors
    assert (
        "mutatingwebhookconfiguration kruise-mutating-webhook-configuration webhook mpod.kb.io: "
        "observed service port 443 (want 9443)"
    ) in result.errors
    # The health path on 9443 does not answer either; then the Service and each configuration, in that order.
    assert steps(result)[0][0] == "not-answering"
    assert steps(result)[1:] == [
        ("port-missing", "kubectl -n kruise-system get service kruise-webhook-service -o yaml"),
        (
            "configuration-elsewhere",
            "kubectl get mutatingwebhookconfiguration kruise-mutating-webhook-configuration -o yaml",
        ),
        (
            "configuration-elsewhere",
            "kubectl get validatingwebhookconfiguration kruise-validating-webhook-configuration -o yaml",
        ),
    ]


def test_configuration_calling_another_service_is_named_with_its_callee() -> None:
    objs = copy.deepcopy(objects("healthy"))
    for obj in objs:
        if obj["metadata"]["name"] == "kruise-validating-webhook-configuration":
            obj["webhooks"][0]["clientConfig"]["service"]["name"] = "kruise-webhook-service-old"
    result = run(kruise_webhook.CHECK, _serve_objects(objs))
    assert result.errors == [
        "validatingwebhookconfiguration kruise-validating-webhook-configuration: observed webhooks calling service "
        "kruise-system/kruise-webhook-service-old:443 (want webhooks calling service "
        "kruise-system/kruise-webhook-service:443)"
    ]
    assert steps(result) == [
        (
            "configuration-elsewhere",
            "kubectl get validatingwebhookconfiguration kruise-validating-webhook-configuration -o yaml",
        )
    ]


def test_body_match_is_opt_in() -> None:
    result = run(koord_webhook.CHECK, serve("backend-wrong-body@koord-webhook"), expect_body="")
    assert result.status is Status.FAILED
    assert result.errors == [f"{KOORD_HEALTHZ}: HTTP 200 with body 'not a webhook' (want '')"]


@pytest.mark.parametrize(("status", "why"), [(403, "HTTP 403"), (429, "HTTP 429"), (302, "HTTP 302")])
def test_unobservable_health_answer_raises(status: int, why: str) -> None:
    api = serve("healthy")
    api.respond(service_proxy("kruise-system", "kruise-webhook-service", 443, "/healthz", "https"), status, "")
    with pytest.raises(ClusterError, match=why):
        run(kruise_webhook.CHECK, api)


def test_api_server_silent_is_error_not_a_hanging_webhook() -> None:
    api = serve("backend-hang@kruise-webhook")
    api.hang("/version")
    with pytest.raises(ClusterError, match="the API server itself does not answer"):
        run(kruise_webhook.CHECK, api)


def test_malformed_configuration_is_error() -> None:
    objs = copy.deepcopy(objects("healthy"))
    for obj in objs:
        if obj["metadata"]["name"] == "kruise-mutating-webhook-configuration":
            obj["webhooks"] = "not a list"
    with pytest.raises(ClusterError, match="field webhooks"):
        run(kruise_webhook.CHECK, _serve_objects(objs))


def test_endpointslices_not_served_falls_back_to_endpoints() -> None:
    api = serve("healthy")
    api.respond(
        f"/apis/discovery.k8s.io/v1/namespaces/kruise-system/{ENDPOINT_SLICES.plural}",
        404,
        {"kind": "Status", "code": 404, "message": "the server could not find the requested resource"},
    )
    result = run(kruise_webhook.CHECK, api)
    assert result.status is Status.OK
    assert result.details["endpoints"]["source"] == "endpoints"


def test_tutorial_names_work_by_configuration() -> None:
    check = koord_webhook.CHECK
    params = check.params(
        service="koordinator-admission", port=9443, mutating_configurations=[], validating_configurations=[]
    )
    assert params.wiring().configurations() == []
    assert check.params().wiring().configurations()[0][1] == "koordinator-mutating-webhook-configuration"
