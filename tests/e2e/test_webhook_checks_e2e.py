"""koord-webhook, kruise-webhook and admission-dry-run end to end: the real managers' webhooks, the probe's own
identity, a real heartbeat receiver.

Healthy: each ok with one ping, both dry-run pods mutated (Koordinator's under Outpost's own profile, the only
one). Also: without that profile admission-dry-run is `error` naming it, the dry run stores nothing, the probe may
create pods only in its namespace, a refusal of the probe is `error` not `failed`, a deleted configuration exits 1,
and a dead koord-manager makes the API server refuse both systems' dry runs (fail-closed pod webhook), named.
Other faults are the fault catalogue's.
"""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from check_runs import CheckRuns, Receiver, broken

from kit.outpost_cli import run_cli
from outpost.checks.admission_dry_run import PROFILE_NAME
from outpost.result import Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost.tooling import rbac

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECKS = ("koord-webhook", "kruise-webhook", "admission-dry-run")
PROBE_NAMESPACE = "outpost-probe"


@pytest.fixture
def config(runs: CheckRuns) -> Path:
    runs.heartbeat(*CHECKS)
    return runs.config_of(dict.fromkeys(CHECKS), deadline=40)


def trust(sb: SandboxInfo) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(sb.ca_path))


def admin_get(sb: SandboxInfo, path: str) -> Any:
    response = httpx.get(
        sb.server + path, headers={"Authorization": f"Bearer {sb.admin_token}"}, verify=trust(sb), timeout=10
    )
    assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text[:200]}"
    return response.json()


def probe_dry_run_create(sb: SandboxInfo, namespace: str) -> httpx.Response:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "e2e-", "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }
    return httpx.post(
        f"{sb.server}/api/v1/namespaces/{namespace}/pods",
        params={"dryRun": "All"},
        json=pod,
        headers={"Authorization": f"Bearer {sb.probe_token}"},
        verify=trust(sb),
        timeout=30,
    )


def test_healthy_each_check_ok_and_pings_once(sb: SandboxInfo, config: Path, receiver: Receiver) -> None:
    settings = load_settings(config)
    for check in CHECKS:
        result = run_check(settings, check, log=False)
        assert result.status is Status.OK, (check, result.errors)
        assert result.reported is True
        assert receiver.pings_for(check) == 1, check
    dry_run = run_check(settings, "admission-dry-run", log=False, report=False)
    assert {s: d["mutated"] for s, d in dry_run.details["systems"].items()} == {"koordinator": True, "openkruise": True}
    # The sandbox applies `outpost rbac --env local`'s output, Outpost's own profile included, and nothing else.
    assert dry_run.details["systems"]["koordinator"]["profiles"] == {PROFILE_NAME: "selects (100%)"}
    assert dry_run.details["systems"]["koordinator"]["expected"] == [
        "annotation outpost.dev/mutated-by",
        "label koordinator.sh/qosClass",
        "label outpost.dev/mutated-by",
    ]


def test_without_outposts_profile_it_fails_closed_naming_it(sb: SandboxInfo, config: Path, tmp_path: Path) -> None:
    """The profile deleted, koord-manager admits the pod unmutated: `error` (its webhook is not observed), never
    `ok`, and the line names the profile to apply; applying `outpost rbac`'s profile again makes it ok."""
    manifest = tmp_path / "profile.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac.shipped_manifests()}))
    sb.kubectl("delete", "clustercolocationprofile", PROFILE_NAME, "--wait=true")
    try:
        result = wait_for_status(config, Status.ERROR)
        assert "no ClusterColocationProfile exists" in result.errors[0], result.errors
        assert f"apply the ClusterColocationProfile {PROFILE_NAME}" in result.errors[0]
        assert [step.failure for step in result.next_steps] == ["no-profile-applies"]
    finally:
        sb.kubectl("apply", "-f", str(manifest))
    assert wait_for_status(config, Status.OK).details["systems"]["koordinator"]["mutated"] is True


def wait_for_status(config: Path, status: Status, timeout: float = 30.0) -> Any:
    """admission-dry-run run until it reaches `status` (koord-manager's informer follows the profile's deletion or
    creation within moments, not at once)."""
    deadline = time.monotonic() + timeout
    while True:
        result = run_check(load_settings(config), "admission-dry-run", log=False, report=False)
        if result.status is status or time.monotonic() > deadline:
            assert result.status is status, result.errors
            return result
        time.sleep(1)


def test_dry_run_stores_nothing(sb: SandboxInfo, config: Path) -> None:
    result = run_check(load_settings(config), "admission-dry-run", log=False, report=False)
    assert result.status is Status.OK, result.errors
    names = [d["pod"] for d in result.details["systems"].values()]
    assert all(name.startswith("outpost-dry-run-") for name in names)
    assert admin_get(sb, f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods")["items"] == []
    everywhere = admin_get(sb, "/api/v1/pods?labelSelector=app.kubernetes.io%2Fmanaged-by%3Doutpost")["items"]
    assert everywhere == []


def test_probe_may_create_pods_only_in_its_own_namespace(sb: SandboxInfo) -> None:
    assert probe_dry_run_create(sb, PROBE_NAMESPACE).status_code == 201
    for namespace in ("default", "kube-system", "koordinator-system", "kruise-system"):
        response = probe_dry_run_create(sb, namespace)
        assert response.status_code == 403, (namespace, response.text[:200])
        assert 'cannot create resource "pods"' in response.json()["message"]
    can_i = sb.kubectl("auth", "can-i", "create", "pods", "--all-namespaces", probe=True, check=False)
    assert can_i.stdout.strip() == "no"
    assert sb.kubectl("auth", "can-i", "create", "pods", "-n", PROBE_NAMESPACE, probe=True).stdout.strip() == "yes"
    assert (
        sb.kubectl("auth", "can-i", "delete", "pods", "-n", PROBE_NAMESPACE, probe=True, check=False).stdout.strip()
        == "no"
    )


OPENKRUISE_ONLY = {
    "systems": [
        {
            "system": "openkruise",
            "configuration": "kruise-mutating-webhook-configuration",
            "pod_owner": {"api_version": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "outpost-dry-run"},
            "want_readiness_gates": ["KruisePodReady"],
        }
    ]
}


@pytest.mark.parametrize(
    ("params", "refused"),
    [
        ({}, "GET /api/v1/namespaces/default "),  # Koordinator's profiles select by the namespace's labels
        (OPENKRUISE_ONLY, "POST /api/v1/namespaces/default/pods"),
    ],
    ids=["namespace-read", "create"],
)
def test_probe_refused_by_rbac_is_error_and_silent(
    sb: SandboxInfo, runs: CheckRuns, params: dict[str, Any], refused: str
) -> None:
    config = runs.config("admission-dry-run", {"namespace": "default", **params}, deadline=40)
    result = runs.run(config, "admission-dry-run")
    assert result.status is Status.ERROR, result.summary
    assert "HTTP 403" in result.summary
    assert refused in result.summary
    runs.assert_silent(result, "admission-dry-run")


def test_cli_exit_code_for_a_deleted_configuration(sb: SandboxInfo, config: Path) -> None:
    with broken("webhook-config-deleted", sb.state_dir, "kruise"):
        proc = run_cli("kruise-webhook", "admission-dry-run", config=config, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    results = {r["check"]: r for r in json.loads(proc.stdout)}
    assert {name: r["status"] for name, r in results.items()} == {
        "kruise-webhook": "failed",
        "admission-dry-run": "failed",
    }


def test_a_dead_koordinator_pod_webhook_is_caught_as_its_install_configures_it(
    sb: SandboxInfo, config: Path, receiver: Receiver
) -> None:
    """With koord-manager gone, what its pod webhook's failurePolicy makes of a pod create is caught, naming it.

    kustomize (config/: `Fail`): the API server refuses every dry-run pod outside the control-plane namespaces,
    OpenKruise's too, naming Koordinator's webhook. helm (the chart's `webhookConfiguration.failurePolicy.pods:
    Ignore`): the API server admits the pods without Koordinator's mutation, so the Koordinator case is failed for
    the mutation it did not get, and OpenKruise's is unaffected."""
    with broken("manager-scaled-to-zero", sb.state_dir, "koord-manager"):
        result = run_check(load_settings(config), "admission-dry-run", log=False)
    assert result.status is Status.FAILED, result.errors
    if sb.install == "kustomize":
        refusal = (
            "mutatingwebhookconfiguration koordinator-mutating-webhook-configuration webhook "
            "mpod-create.koordinator.sh refused the dry-run create of pod outpost-probe/outpost-dry-run-* "
            "(dry run, {system}): HTTP "
        )
        assert [line.partition("HTTP ")[0] + "HTTP " for line in result.errors] == [
            refusal.format(system=system) for system in ("koordinator", "openkruise")
        ]
        assert all('failed calling webhook "mpod-create.koordinator.sh"' in line for line in result.errors)
        assert {s: d["webhook"] for s, d in result.details["systems"].items()} == {
            "koordinator": "mpod-create.koordinator.sh",
            "openkruise": "mpod-create.koordinator.sh",
        }
    else:
        (line,) = result.errors
        assert line.startswith("pod outpost-probe/outpost-dry-run-"), line
        assert "(dry run, koordinator): admitted without mutation (" in line, line
        assert "want 'LS', profile outpost-probe-dry-run" in line, line
    assert receiver.pings_for("admission-dry-run") == 0
