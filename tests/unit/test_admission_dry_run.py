"""admission-dry-run: `evaluate` over the dry-run answers the probe got from the sandbox in every webhook state,
refusals as the API server words them, `fetch` over the fake API server, and the seam it writes through
(`Cluster.dry_run_create`: always dryRun=All, a webhook's 403 returned, RBAC's 403 raised, a longer read
timeout allowed but never past the deadline)."""

from __future__ import annotations

import json
import ssl
from typing import Any

import httpx
import pytest

from kit import NOW, FakeApiServer, fake_cluster
from kit.webhook_fixtures import STATES, answer, objects
from outpost.checks import admission_dry_run
from outpost.checks.admission_dry_run import (
    KOORDINATOR,
    OPENKRUISE,
    AdmissionDryRunParams,
    DryRunAnswer,
    MutationCase,
    evaluate,
    fetch,
    probe_pod,
)
from outpost.cluster import Cluster, Deadline
from outpost.errors import ClusterAuthError
from outpost.kube import WebhookConfiguration, parse
from outpost.result import Status

PARAMS = AdmissionDryRunParams()
PODS = "/api/v1/namespaces/outpost-probe/pods"


def captured_answers(state: str) -> list[DryRunAnswer]:
    configurations = {o["metadata"]["name"]: o for o in objects(state) if o["kind"] == "MutatingWebhookConfiguration"}
    answers = []
    for case in PARAMS.systems:
        status, body = answer(state, f"dry_run.{case.system}")
        raw = configurations.get(case.configuration)
        answers.append(DryRunAnswer(case, PODS, int(status), body, 12,
                                    None if raw is None else parse(WebhookConfiguration, raw, "fixture")))
    return answers


KOORD_UNMUTATED = ("(dry run, koordinator): admitted without mutation (label koordinator.sh/qosClass absent "
                   "(want 'BE')); mutatingwebhookconfiguration koordinator-mutating-webhook-configuration webhook "
                   "mpod-create.koordinator.sh (failurePolicy Ignore) did not mutate it")
KRUISE_UNMUTATED = ("(dry run, openkruise): admitted without mutation (readiness gate KruisePodReady absent); "
                    "mutatingwebhookconfiguration kruise-mutating-webhook-configuration webhook mpod.kb.io "
                    "(failurePolicy Ignore) did not mutate it")


def expected(state: str) -> tuple[Status, str]:
    """Every webhook fault on a system leaves that system's pod unmutated (failurePolicy Ignore)."""
    if state == "healthy":
        return Status.OK, ""
    if state.endswith("+failurePolicy=Fail"):  # the API server refuses the create and names the webhook
        return Status.FAILED, ("webhook mpod-create.koordinator.sh (koordinator): refused the dry-run create of pod "
                               "outpost-probe/outpost-dry-run-* (dry run, koordinator): HTTP 500 (Internal error "
                               'occurred: failed calling webhook "mpod-create.koordinator.sh"')
    if state == "webhook-config-deleted@koordinator":
        return Status.FAILED, ("(dry run, koordinator): admitted without mutation (label koordinator.sh/qosClass "
                               "absent (want 'BE')); mutatingwebhookconfiguration "
                               "koordinator-mutating-webhook-configuration: not found")
    if state == "webhook-config-deleted@kruise":
        return Status.FAILED, ("(dry run, openkruise): admitted without mutation (readiness gate KruisePodReady "
                               "absent); mutatingwebhookconfiguration kruise-mutating-webhook-configuration: not found")
    return Status.FAILED, KOORD_UNMUTATED if state.endswith("@koord-webhook") else KRUISE_UNMUTATED


@pytest.mark.parametrize("state", STATES)
def test_captured_states(state: str) -> None:
    status, error = expected(state)
    result = evaluate(captured_answers(state), PARAMS, NOW)
    assert result.status is status, result.errors
    if status is Status.OK:
        assert result.summary == "dry-run pods admitted and mutated (koordinator, openkruise); nothing stored"
        assert {s: d["mutated"] for s, d in result.details["systems"].items()} == {"koordinator": True,
                                                                                  "openkruise": True}
    else:
        assert len(result.errors) == 1  # only the broken system is named
        assert result.errors[0].startswith(("pod outpost-probe/outpost-dry-run-", "webhook "))
        assert error in result.errors[0]


def _status(code: int, message: str, reason: str = "") -> str:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code})


FAILED_CALLING = _status(500, 'Internal error occurred: failed calling webhook "mpod-create.koordinator.sh": failed '
                              'to call webhook: Post "https://koordinator-webhook-service.koordinator-system.svc:443/'
                              'mutate-pod?timeout=5s": context deadline exceeded', "InternalError")
DENIED = _status(403, 'admission webhook "vpod.koordinator.sh" denied the request: qos class BE needs batch resources',
                 "Forbidden")


@pytest.mark.parametrize(("code", "body", "status", "line"), [
    # failurePolicy Fail and a webhook that hangs (or is down, or untrusted): the API server names it
    (500, FAILED_CALLING, Status.FAILED, "webhook mpod-create.koordinator.sh (koordinator): refused the dry-run "
                                         "create of pod outpost-probe/outpost-dry-run-* (dry run, koordinator): HTTP "
                                         "500 (Internal error occurred: failed calling webhook"),
    (403, DENIED, Status.FAILED, "webhook vpod.koordinator.sh (koordinator): refused the dry-run create"),
    (400, _status(400, 'admission webhook "mpod-create.koordinator.sh" does not support dry run'), Status.FAILED,
     "webhook mpod-create.koordinator.sh (koordinator)"),
    # refusals that name no webhook are not a verdict on the webhook
    (404, _status(404, 'namespaces "outpost-probe" not found', "NotFound"), Status.ERROR,
     'HTTP 404 (namespaces "outpost-probe" not found), admission not observed'),
    (429, _status(429, "Too many requests, please try again later."), Status.ERROR, "HTTP 429 rate limited"),
    (302, "", Status.ERROR, "HTTP 302 redirect (not followed)"),
    (500, "<html>bad gateway</html>", Status.ERROR, "HTTP 500 ('<html>bad gateway</html>'), admission not observed"),
    (201, "<html>ok</html>", Status.ERROR, "HTTP 201 with a body that is not JSON"),
    (201, json.dumps({"kind": "Status"}), Status.ERROR, "HTTP 201 without the admitted pod"),
    (201, json.dumps({"kind": "Pod", "metadata": {"name": "p", "labels": "BE"}}), Status.ERROR,
     "field metadata.labels"),
])
def test_refusals(code: int, body: str, status: Status, line: str) -> None:
    result = evaluate([DryRunAnswer(KOORDINATOR, PODS, code, body, 5000, None)], PARAMS, NOW)
    assert result.status is status
    assert line in result.errors[0], result.errors


def test_one_system_unobserved_makes_the_run_an_error_and_keeps_the_other_verdict() -> None:
    koord, kruise = captured_answers("webhook-no-mutate@kruise-webhook")
    koord = DryRunAnswer(KOORDINATOR, PODS, 429, _status(429, "slow down"), 1, None)
    result = evaluate([koord, kruise], PARAMS, NOW)
    assert result.status is Status.ERROR
    assert len(result.errors) == 2
    assert KRUISE_UNMUTATED in result.errors[1]


def test_a_label_with_the_wrong_value_is_named() -> None:
    (_, kruise) = captured_answers("healthy")
    pod = json.loads(captured_answers("healthy")[0].body)
    pod["metadata"]["labels"]["koordinator.sh/qosClass"] = "LS"
    result = evaluate([DryRunAnswer(KOORDINATOR, PODS, 201, json.dumps(pod), 1, None), kruise], PARAMS, NOW)
    assert result.status is Status.FAILED
    assert "label koordinator.sh/qosClass='LS' (want 'BE')" in result.errors[0]


def test_sidecar_style_expectation() -> None:
    case = MutationCase(system="openkruise", configuration="kruise-mutating-webhook-configuration",
                        pod_labels={"app": "with-sidecar"}, want_containers=["sidecar"])
    pod = json.loads(captured_answers("healthy")[1].body)
    result = evaluate([DryRunAnswer(case, PODS, 201, json.dumps(pod), 1, None)], PARAMS, NOW)
    assert "container sidecar absent" in result.errors[0]


def test_a_case_must_assert_some_mutation() -> None:
    with pytest.raises(ValueError, match="no mutation to assert"):
        MutationCase(system="x", configuration="y", pod_labels={"a": "b"})


def test_probe_pod_is_small_and_mounts_no_token() -> None:
    pod = probe_pod(PARAMS, KOORDINATOR)
    assert pod["metadata"] == {"generateName": "outpost-dry-run-", "namespace": "outpost-probe",
                               "labels": {"app.kubernetes.io/managed-by": "outpost",
                                          "koordinator.sh/enable-colocation": "true"}}
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert [c["name"] for c in pod["spec"]["containers"]] == ["probe"]


def test_fetch_sends_dry_runs_only_into_the_probe_namespace() -> None:
    api = FakeApiServer().add_all(objects("healthy"))
    status, body = answer("healthy", "dry_run.openkruise")
    api.respond(PODS, int(status), body, content_type="application/json")
    params = AdmissionDryRunParams(systems=[OPENKRUISE])
    with fake_cluster(api, deadline=Deadline(20)) as cluster:
        result = evaluate(fetch(cluster, params), params, NOW)
    assert result.status is Status.OK, result.errors
    post = [r for r in api.requests if r.method != "GET"]
    assert [(r.method, r.path, r.query) for r in post] == [("POST", PODS, (("dryRun", "All"),))]


# -- the seam ---------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self, code: int, body: str) -> None:
        self.code, self.body = code, body
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        data = self.body.encode()
        return httpx.Response(self.code, headers={"Content-Type": "application/json"}, stream=httpx.ByteStream(data))


def cluster(recorder: Recorder, deadline: float = 60, read_timeout: float = 10) -> Cluster:
    return Cluster("fake", "https://fake.invalid", verify=ssl.create_default_context(),
                   transport=httpx.MockTransport(recorder), read_timeout=read_timeout, deadline=Deadline(deadline))


def test_dry_run_create_always_sends_dry_run_all() -> None:
    recorder = Recorder(201, answer("healthy", "dry_run.koordinator")[1])
    with cluster(recorder) as c:
        response = c.dry_run_create(PODS, {"kind": "Pod"})
    (request,) = recorder.requests
    assert (request.method, request.url.path, str(request.url.params)) == ("POST", PODS, "dryRun=All")
    assert json.loads(request.content) == {"kind": "Pod"}
    assert response.status_code == 201


def test_rbac_refusal_raises_auth_error() -> None:
    rbac = _status(403, 'pods is forbidden: User "outpost-probe" cannot create resource "pods" in API group "" in the '
                        'namespace "default"', "Forbidden")
    with cluster(Recorder(403, rbac)) as c, pytest.raises(ClusterAuthError, match="cannot create resource"):
        c.dry_run_create("/api/v1/namespaces/default/pods", {"kind": "Pod"})


def test_webhook_denial_is_returned_for_the_check_to_judge() -> None:
    with cluster(Recorder(403, DENIED)) as c:
        assert c.dry_run_create(PODS, {"kind": "Pod"}).status_code == 403
    with cluster(Recorder(403, DENIED)) as c, pytest.raises(ClusterAuthError):
        c.get(PODS)  # a read never treats a 403 as anything but our identity refused


@pytest.mark.parametrize(("deadline", "asked", "read"), [(60, 25, 25), (15, 25, 15), (60, None, 10)])
def test_dry_run_may_wait_longer_than_a_read_but_not_past_the_deadline(deadline: float, asked: float | None,
                                                                       read: float) -> None:
    recorder = Recorder(201, "{}")
    with cluster(recorder, deadline=deadline) as c:
        c.dry_run_create(PODS, {}, timeout=asked)
        c.get("/version", timeout=asked)
    timeouts: list[dict[str, Any]] = [r.extensions["timeout"] for r in recorder.requests]
    assert timeouts[0]["read"] == pytest.approx(read, abs=0.5)
    assert timeouts[1]["read"] == pytest.approx(min(read, 10), abs=0.5)  # a GET never exceeds the read timeout


def test_check_is_registered_with_its_catalogue_row() -> None:
    check = admission_dry_run.CHECK
    assert (check.name, check.system, check.severity) == ("admission-dry-run", "koordinator / openkruise", "critical")
