"""The probe's generated RBAC (`outpost rbac --env local`) on the real sandbox: sufficient, minimal, nothing else.

The probe holds exactly the generated rules; `run --all` as the probe is ok (sufficient); removing any rule a
healthy cluster exercises turns a check that declared it to `error` (minimal; situational rules are exactly the
known ones); Secrets, other namespaces, objects, verbs, the node proxy and undeclared URLs answer 403; a real pod
create is refused by `outpost-probe-dry-run-only` while a dry run is admitted.
"""

from __future__ import annotations

import json
import ssl
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml
from check_runs import LOCAL

from outpost.config import Settings, parse_settings
from outpost.result import Status
from outpost.runner import run_check
from outpost.tooling import rbac
from outpost_sandbox.state import pointed_at

if TYPE_CHECKING:
    from conftest import SandboxInfo

RBAC_PROPAGATION_SECONDS = 20.0


@pytest.fixture(scope="module")
def local(sandbox: SandboxInfo) -> Settings:
    """The local environment as shipped, its sandbox paths pointed at this session's sandbox."""
    return parse_settings(pointed_at(yaml.safe_load(LOCAL.read_text()), sandbox.state_dir), "local.yaml")


def _admin(sandbox: SandboxInfo) -> httpx.Client:
    return _client(sandbox, sandbox.admin_token)


def _client(sandbox: SandboxInfo, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=sandbox.server,
        verify=ssl.create_default_context(cafile=str(sandbox.ca_path)),
        timeout=10,
        headers={"Authorization": f"Bearer {token}"},
    )


def _allowed(client: httpx.Client, namespace: str | None, grant: rbac.Grant | rbac.UrlGrant) -> bool:
    """SubjectAccessReview: may the probe do what `grant` grants (its first verb and name)?"""
    spec: dict[str, Any] = {"user": rbac.PROBE_USER, "groups": ["system:authenticated"]}
    if isinstance(grant, rbac.UrlGrant):
        spec["nonResourceAttributes"] = {"path": grant.path, "verb": "get"}
    else:
        resource, _, subresource = grant.resource.partition("/")
        attributes: dict[str, Any] = {"group": grant.group, "resource": resource, "verb": grant.verbs[0]}
        if subresource:
            attributes["subresource"] = subresource
        if namespace:
            attributes["namespace"] = namespace
        if grant.names:
            attributes["name"] = grant.names[0]
        spec["resourceAttributes"] = attributes
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    answer = client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
    answer.raise_for_status()
    return bool(answer.json()["status"].get("allowed"))


def _wait_until(client: httpx.Client, namespace: str | None, grant: rbac.Grant | rbac.UrlGrant, allowed: bool) -> None:
    deadline = time.monotonic() + RBAC_PROPAGATION_SECONDS
    while _allowed(client, namespace, grant) != allowed:
        assert time.monotonic() < deadline, (
            f"{grant.rule()} in {namespace or 'the ClusterRole'}: the probe still {'is not' if allowed else 'is'} "
            f"allowed after {RBAC_PROPAGATION_SECONDS:g} s (granted elsewhere, or the change not in effect)"
        )
        time.sleep(0.2)


def _replace(sandbox: SandboxInfo, role: dict[str, Any], name: str) -> None:
    """Replace the role as a whole (its rules are one atomic list)."""
    manifest = sandbox.state_dir / f"e2e-rbac-{name}.json"
    manifest.write_text(json.dumps(role))
    sandbox.kubectl("replace", "-f", str(manifest))


def _role_of(manifests: list[dict[str, Any]], namespace: str | None) -> dict[str, Any]:
    kind = "Role" if namespace else "ClusterRole"
    return next(
        m
        for m in manifests
        if m["kind"] == kind
        and m["metadata"]["name"] == rbac.PROBE_ROLE
        and m["metadata"].get("namespace") == namespace
    )


def test_the_sandbox_probe_holds_exactly_the_generated_roles(sandbox: SandboxInfo, local: Settings) -> None:
    generated = rbac.manifests(local)
    roles = [m for m in generated if m["kind"] in ("Role", "ClusterRole")]
    assert roles, "the local environment generates no role"
    for role in roles:
        namespace = role["metadata"].get("namespace")
        args = ["get", role["kind"].lower(), role["metadata"]["name"], "-o", "json"]
        live = json.loads(sandbox.kubectl(*args, *(["-n", namespace] if namespace else [])).stdout)
        assert live["rules"] == role["rules"], f"{role['kind']} {namespace}/{role['metadata']['name']}"


def test_generated_rbac_is_sufficient_every_enabled_check_is_ok(local: Settings) -> None:
    results = {name: run_check(local, name, report=False, log=False) for name in local.enabled_checks()}
    not_ok = {name: (r.status.value, r.summary) for name, r in results.items() if r.status is not Status.OK}
    assert not not_ok, json.dumps(not_ok, indent=1)


def test_generated_rbac_is_minimal_each_rule_removed_breaks_a_check(sandbox: SandboxInfo, local: Settings) -> None:
    generated = rbac.plan(rbac.declared(local))
    manifests = rbac.manifests(local)
    exercised = [(ns, grant) for ns, grant in generated.rules() if not grant.when]
    situational = sorted(
        (ns or "", grant.rule().get("resources", [""])[0], tuple(grant.checks))
        for ns, grant in generated.rules()
        if grant.when
    )
    # Sent only in some situations, so a healthy cluster cannot show them needed: exactly these.
    assert situational == [
        ("koordinator-system", "endpoints", ("koord-webhook",)),  # no EndpointSlice for the Service
        # A warm instance follows the daemon pods; without `watch` it lists them every run (still ok, costlier).
        ("koordinator-system", "pods", ("koordlet-coverage",)),
        ("kruise-system", "endpoints", ("kruise-webhook",)),
        ("kruise-system", "pods", ("kruise-daemon-coverage",)),
    ]
    assert len(exercised) >= 20
    unbroken: list[str] = []
    with _admin(sandbox) as admin:
        for namespace, grant in exercised:
            role = _role_of(manifests, namespace)
            without = {**role, "rules": [r for r in role["rules"] if r != grant.rule()]}
            assert len(without["rules"]) == len(role["rules"]) - 1
            _replace(sandbox, without, "without")
            try:
                _wait_until(admin, namespace, grant, allowed=False)
                results = [run_check(local, name, report=False, log=False) for name in grant.checks]
                if not any(r.status is Status.ERROR for r in results):
                    unbroken.append(
                        f"{namespace or 'cluster'}: {grant.rule()} -> "
                        + "; ".join(f"{r.check} {r.status.value}" for r in results)
                    )
            finally:
                _replace(sandbox, role, "restore")
                _wait_until(admin, namespace, grant, allowed=True)
    assert not unbroken, "rules no check needs:\n" + "\n".join(unbroken)


# (verb, resource[/name], namespace or None) the probe must NOT be allowed.
FORBIDDEN = [
    ("get", "secrets/koordinator-webhook-certs", "koordinator-system"),  # opt-in only (read_serving_secrets)
    ("get", "secrets/kruise-webhook-certs", "kruise-system"),
    ("list", "secrets", "koordinator-system"),
    ("get", "secrets/koord-scheduler-token", "koordinator-system"),
    ("get", "secrets/webhook-certs", "koordinator-system"),  # not Koordinator's: its Secret has another name
    ("get", "secrets/webhook-certs", "kruise-system"),
    ("list", "secrets", None),
    ("get", "secrets/kruise-webhook-certs", "default"),
    ("watch", "secrets", "kruise-system"),
    ("get", "configmaps", "kube-system"),
    ("watch", "pods", None),
    ("get", "namespaces/kube-system", None),
    ("get", "deployments.apps/koord-scheduler", "koordinator-system"),
    ("list", "deployments.apps", "kruise-system"),
    ("get", "nodes/proxy", None),
    ("get", "pods/proxy", "kube-system"),
    ("get", "services/proxy", "koordinator-system"),
    ("create", "pods", "default"),
    ("create", "pods", "koordinator-system"),
    ("delete", "pods", "outpost-probe"),
    ("patch", "pods/status", "default"),
    ("create", "clustercolocationprofiles.config.koordinator.sh", None),
    ("get", "leases.coordination.k8s.io/kube-scheduler", "kube-system"),
    ("list", "customresourcedefinitions.apiextensions.k8s.io", None),
    ("get", "serviceaccounts", "default"),
    ("create", "serviceaccounts/token", "default"),
]
ALLOWED = [
    ("list", "nodes", None),
    ("watch", "nodes", None),  # incremental reads: a warm instance follows the nodes it listed
    ("list", "pods", None),  # gang-scheduling's Pending pods, cluster-wide
    ("get", "namespaces/outpost-probe", None),  # admission-dry-run: the probe namespace's labels
    ("list", "clustercolocationprofiles.config.koordinator.sh", None),
    ("create", "pods", "outpost-probe"),
    ("get", "deployments.apps/koord-manager", "koordinator-system"),
]


def _can_i(sandbox: SandboxInfo, verb: str, what: str, namespace: str | None) -> bool:
    args = ["auth", "can-i", verb, what, *(["-n", namespace] if namespace else ["--all-namespaces"])]
    if what.endswith("/proxy") or what.endswith("/status") or what.endswith("/token"):
        resource, _, sub = what.rpartition("/")
        args = [
            "auth",
            "can-i",
            verb,
            resource,
            f"--subresource={sub}",
            *(["-n", namespace] if namespace else ["--all-namespaces"]),
        ]
    answer = sandbox.kubectl(*args, probe=True, check=False)
    word = (answer.stdout.split() or [""])[0]
    assert word in ("yes", "no"), f"kubectl auth can-i: {answer.stdout} {answer.stderr}"
    return word == "yes"


@pytest.mark.parametrize(("verb", "what", "namespace"), FORBIDDEN)
def test_undeclared_access_is_refused(sandbox: SandboxInfo, verb: str, what: str, namespace: str | None) -> None:
    assert not _can_i(sandbox, verb, what, namespace)


@pytest.mark.parametrize(("verb", "what", "namespace"), ALLOWED)
def test_declared_access_is_allowed(sandbox: SandboxInfo, verb: str, what: str, namespace: str | None) -> None:
    assert _can_i(sandbox, verb, what, namespace)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/koordinator-system/secrets",
        "/api/v1/namespaces/koordinator-system/secrets/koordinator-webhook-certs",
        "/api/v1/namespaces/kruise-system/secrets/kruise-webhook-certs",
        "/api/v1/namespaces/kruise-system/secrets/kruise-webhook-certs-other",
        "/api/v1/secrets",
        "/api/v1/configmaps",
        "/apis/apps/v1/namespaces/kube-system/deployments",
        "/debug/pprof/",
        "/logs/",
        "/metrics/slis",
    ],
)
def test_direct_gets_of_what_no_check_reads_answer_403(sandbox: SandboxInfo, path: str) -> None:
    with _client(sandbox, sandbox.probe_token) as probe:
        assert probe.get(path).status_code == 403


# ---- dry runs only: the ValidatingAdmissionPolicy ------------------------------------------------------------
POLICY = "outpost-probe-dry-run-only"
PROBE_NAMESPACE = "outpost-probe"


def _pod(prefix: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": prefix, "namespace": PROBE_NAMESPACE},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }


def _stored(admin: httpx.Client, prefix: str) -> list[str]:
    listed = admin.get(f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods")
    listed.raise_for_status()
    return [p["metadata"]["name"] for p in listed.json()["items"] if p["metadata"]["name"].startswith(prefix)]


def _holds(live: Any, wanted: Any) -> bool:
    """`live` is `wanted` plus what the API server defaults (matchPolicy, objectSelector, a rule's scope)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(k in live and _holds(live[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(live) == len(wanted) and all(map(_holds, live, wanted))
    return bool(live == wanted)


def test_the_sandbox_holds_the_generated_dry_run_policy(sandbox: SandboxInfo, local: Settings) -> None:
    generated = {m["kind"]: m for m in rbac.manifests(local) if m["kind"].startswith("ValidatingAdmissionPolicy")}
    assert set(generated) == {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, (
        "outpost rbac --env local generates no dry-run policy for the probe's create pods right"
    )
    for kind, wanted in generated.items():
        assert wanted["metadata"]["name"] == POLICY
        live = json.loads(sandbox.kubectl("get", kind.lower(), POLICY, "-o", "json").stdout)
        assert _holds(live["spec"], wanted["spec"]), f"{kind}: live {live['spec']}, generated {wanted['spec']}"
    policy = json.loads(sandbox.kubectl("get", "validatingadmissionpolicy", POLICY, "-o", "json").stdout)
    assert not policy.get("status", {}).get("typeChecking", {}).get("expressionWarnings"), policy["status"]


def test_as_the_probe_a_real_pod_create_is_refused_naming_the_policy(sandbox: SandboxInfo) -> None:
    """RBAC allows the create (admission-dry-run needs it); the policy refuses it unless it is a dry run."""
    assert _can_i(sandbox, "create", "pods", PROBE_NAMESPACE)
    prefix = "outpost-e2e-real-create-"
    with _client(sandbox, sandbox.probe_token) as probe, _admin(sandbox) as admin:
        try:
            answer = probe.post(f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods", json=_pod(prefix))
            assert answer.status_code == 403, f"a real create by the probe answered {answer.status_code}"
            message = answer.json()["message"]
            assert f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request" in message, message
            assert "only as a dry run" in message, message
            assert _stored(admin, prefix) == []
        finally:
            for name in _stored(admin, prefix):  # a create that got through must not stay
                admin.delete(f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods/{name}", params={"gracePeriodSeconds": 0})


def test_as_the_probe_a_dry_run_pod_create_is_admitted_and_stores_nothing(sandbox: SandboxInfo) -> None:
    prefix = "outpost-e2e-dry-run-"
    with _client(sandbox, sandbox.probe_token) as probe, _admin(sandbox) as admin:
        answer = probe.post(f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods", params={"dryRun": "All"}, json=_pod(prefix))
        assert answer.status_code == 201, answer.text[:300]
        assert answer.json()["metadata"]["name"].startswith(prefix)
        assert _stored(admin, prefix) == []


def test_the_policy_binds_the_probe_only(sandbox: SandboxInfo) -> None:
    """Impersonated with the admin kubeconfig: the probe's real create is refused naming the policy; another
    identity's real create in the same namespace is not the policy's business (RBAC is what holds it there)."""
    probe_pod, other_pod = "outpost-e2e-as-probe", "outpost-e2e-as-other"
    try:
        as_probe = sandbox.kubectl(
            "run",
            probe_pod,
            "-n",
            PROBE_NAMESPACE,
            "--image=registry.k8s.io/pause:3.10",
            "--restart=Never",
            "--as",
            rbac.PROBE_USER,
            check=False,
        )
        assert as_probe.returncode != 0, "the probe's real create (impersonated) was admitted"
        assert f"ValidatingAdmissionPolicy '{POLICY}'" in as_probe.stderr, as_probe.stderr
        as_other = sandbox.kubectl(
            "run",
            other_pod,
            "-n",
            PROBE_NAMESPACE,
            "--image=registry.k8s.io/pause:3.10",
            "--restart=Never",
            "--as",
            "outpost-e2e-operator",
            "--as-group",
            "system:masters",
            check=False,
        )
        assert as_other.returncode == 0, as_other.stderr
    finally:
        sandbox.kubectl(
            "delete",
            "pod",
            probe_pod,
            other_pod,
            "-n",
            PROBE_NAMESPACE,
            "--ignore-not-found",
            "--grace-period=0",
            "--force",
            check=False,
        )
