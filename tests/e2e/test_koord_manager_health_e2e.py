"""koord-manager-health end to end: the real koord-manager pods (both replicas) through the real pod proxy, as the
probe.

Healthy → ok, each pod's `/readyz` answering 200 `ok`, exactly one ping. Asked at the metrics port instead
(`port: 8080`, `paths: [/metrics]`), every pod answers 200 with a body that is not `ok`: failed by default
(a 200 from something else on the port is not readiness), ok with `expect_body: null` (status code alone).
The manager down, frozen or scaled to 0 is the fault catalogue's (test_fault_catalogue_e2e.py); the runtime
adapters' answer to it is test_runtimes_koordinator_e2e.py's.
"""

from __future__ import annotations

from check_runs import CheckRuns, assert_every_pod_ready, manager_pods

from outpost.result import Status

CHECK = "koord-manager-health"
NS = "koordinator-system"
SELECTOR = "koord-app=koord-manager"
REPLICAS = 2  # the koord-manager Deployment of Koordinator's config/, as the sandbox installs it
METRICS = {"port": 8080, "paths": ["/metrics"]}


def test_healthy_is_ok_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert_every_pod_ready(result, manager_pods(runs.sandbox, NS, SELECTOR), REPLICAS)


def test_another_body_fails_unless_judged_by_status_code_only(runs: CheckRuns) -> None:
    pods = manager_pods(runs.sandbox, NS, SELECTOR)
    by_body = runs.probe(CHECK, METRICS)
    assert by_body.status is Status.FAILED, by_body.summary
    assert [line.partition(": ")[0] for line in by_body.errors] == [f"pod {NS}/{pod} :8080/metrics" for pod in pods]
    assert all("HTTP 200 with body " in line and line.endswith("(want 'ok')") for line in by_body.errors)
    by_code = runs.probe(CHECK, {**METRICS, "expect_body": None})
    assert by_code.status is Status.OK, by_code.errors
    assert runs.receiver.pings_for(CHECK) == 1  # the status-code run's only
