"""outpost.tooling.rbac and outpost.kube.access: declarations, the generator, and its output for local (the golden
file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from outpost import registry
from outpost.cli import main
from outpost.config import GkeAuth, Settings, environment_file
from outpost.kube import access
from outpost.kube.access import NonResourceAccess, ResourceAccess
from outpost.settings import load_settings
from outpost.tooling import rbac

GOLDEN = Path(__file__).parent / "golden" / "rbac_local.yaml"
R = ResourceAccess
CORE = ""


def described(name: str, params: dict[str, Any] | None = None) -> list[str]:
    spec = registry.get(name)
    return [
        item.describe() + (" [when]" if item.when else "")
        for item in spec.access(spec.params.model_validate(params or {}))
    ]


DEFAULT_DECLARATIONS: dict[str, list[str]] = {
    "koord-manager-health": [
        "get apps/deployments koord-manager in koordinator-system",
        "list pods in koordinator-system",
        "get pods/proxy in koordinator-system",
    ],
    "koord-webhook": [
        "get services/proxy https:koordinator-webhook-service:443 in koordinator-system",
        "get services koordinator-webhook-service in koordinator-system",
        "get admissionregistration.k8s.io/mutatingwebhookconfigurations koordinator-mutating-webhook-configuration",
        "get admissionregistration.k8s.io/validatingwebhookconfigurations koordinator-validating-webhook-configuration",
        "list discovery.k8s.io/endpointslices in koordinator-system",
        "get endpoints koordinator-webhook-service in koordinator-system [when]",
    ],
    "koordlet-coverage": [
        "get apps/daemonsets koordlet in koordinator-system",
        "list nodes",
        "watch nodes [when]",
        "list pods in koordinator-system",
        "watch pods in koordinator-system [when]",
    ],
    "nodemetric-freshness": [
        "list nodes",
        "watch nodes [when]",
        "list slo.koordinator.sh/nodemetrics",
        "watch slo.koordinator.sh/nodemetrics [when]",
    ],
    "ls-latency": [],  # required params: see test_ls_latency_declares_its_proxy_paths
    "be-eviction-rate": ["list events", "get pods [when]"],
    "gang-scheduling": ["list scheduling.sigs.k8s.io/podgroups", "list pods"],
    "node-utilization": [
        "list nodes",
        "watch nodes [when]",
        "list slo.koordinator.sh/nodemetrics",
        "watch slo.koordinator.sh/nodemetrics [when]",
    ],
    "apiserver-health": ["get /livez", "get /readyz"],
    "apiserver-triage": ["get /readyz", "list namespaces"],
    "apiserver-latency": ["get /metrics"],
    "apiserver-cert-expiry": [],
    "kwok-node-consistency": [
        "list nodes",
        "watch nodes [when]",
        "list coordination.k8s.io/leases in kube-node-lease",
        "watch coordination.k8s.io/leases in kube-node-lease [when]",
    ],
    "kruise-manager-health": [
        "get apps/deployments kruise-controller-manager in kruise-system",
        "list pods in kruise-system",
        "get pods/proxy in kruise-system",
    ],
    "kruise-webhook": [
        "get services/proxy https:kruise-webhook-service:443 in kruise-system",
        "get services kruise-webhook-service in kruise-system",
        "get admissionregistration.k8s.io/mutatingwebhookconfigurations kruise-mutating-webhook-configuration",
        "get admissionregistration.k8s.io/validatingwebhookconfigurations kruise-validating-webhook-configuration",
        "list discovery.k8s.io/endpointslices in kruise-system",
        "get endpoints kruise-webhook-service in kruise-system [when]",
    ],
    "kruise-daemon-coverage": [
        "get apps/daemonsets kruise-daemon in kruise-system",
        "list nodes",
        "watch nodes [when]",
        "list pods in kruise-system",
        "watch pods in kruise-system [when]",
    ],
    "kruise-manager-replicas": ["get apps/deployments kruise-controller-manager in kruise-system"],
    "leader-leases": [
        "get coordination.k8s.io/leases koordinator-manager in koordinator-system",
        "get coordination.k8s.io/leases koord-scheduler in koordinator-system",
        "get coordination.k8s.io/leases koord-descheduler in koordinator-system",
        "get coordination.k8s.io/leases kruise-manager in kruise-system",
        "list pods in koordinator-system",
        "list pods in kruise-system",
    ],
    "admission-dry-run": [
        "get admissionregistration.k8s.io/mutatingwebhookconfigurations koordinator-mutating-webhook-configuration",
        "get admissionregistration.k8s.io/mutatingwebhookconfigurations kruise-mutating-webhook-configuration",
        "list config.koordinator.sh/clustercolocationprofiles",
        "get namespaces outpost-probe",
        "create pods in outpost-probe",
    ],
    "webhook-cert-expiry": [
        "get admissionregistration.k8s.io/mutatingwebhookconfigurations koordinator-mutating-webhook-configuration",
        "get admissionregistration.k8s.io/validatingwebhookconfigurations koordinator-validating-webhook-configuration",
        "get admissionregistration.k8s.io/mutatingwebhookconfigurations kruise-mutating-webhook-configuration",
        "get admissionregistration.k8s.io/validatingwebhookconfigurations kruise-validating-webhook-configuration",
    ],
    "kwok-pod-reconciler": ["list nodes", "list pods", "patch pods/status [when]"],
}


def test_every_declaration_row_is_a_registered_check() -> None:
    # The rows pin these checks' declarations; a new check needs none here: test_rbac_covers_fetch holds what its
    # fetch sends to its declaration, and the RBAC golden file's diff shows what it grants.
    assert set(DEFAULT_DECLARATIONS) <= set(registry.names())


@pytest.mark.parametrize("name", [n for n in DEFAULT_DECLARATIONS if n != "ls-latency"])
def test_each_check_declares_what_its_fetch_sends_for_the_default_params(name: str) -> None:
    assert described(name) == DEFAULT_DECLARATIONS[name]


@pytest.mark.parametrize(
    ("name", "params", "want"),
    [
        (
            "koord-manager-health",
            {"namespace": "koord", "deployment": "mgr"},
            ["get apps/deployments mgr in koord", "list pods in koord", "get pods/proxy in koord"],
        ),
        (
            "kruise-webhook",
            {
                "namespace": "k",
                "service": "hook",
                "port": 9443,
                "mutating_configurations": [],
                "validating_configurations": ["v"],
            },
            [
                "get services/proxy https:hook:9443 in k",
                "get services hook in k",
                "get admissionregistration.k8s.io/validatingwebhookconfigurations v",
                "list discovery.k8s.io/endpointslices in k",
                "get endpoints hook in k [when]",
            ],
        ),
        (
            "kruise-daemon-coverage",
            {"probe_healthz": True},
            [
                "get apps/daemonsets kruise-daemon in kruise-system",
                "list nodes",
                "watch nodes [when]",
                "list pods in kruise-system",
                "watch pods in kruise-system [when]",
                "get nodes/proxy",
            ],
        ),
        (
            "node-utilization",
            {"source": "metrics.k8s.io"},
            ["list nodes", "watch nodes [when]", "list metrics.k8s.io/nodes"],
        ),
        (
            "be-eviction-rate",
            {"namespace": "shop", "api": "events.k8s.io/v1"},
            ["list events.k8s.io/events in shop", "get pods in shop [when]"],
        ),
        ("be-eviction-rate", {"max_pod_lookups": 0}, ["list events"]),
        (
            "gang-scheduling",
            {"namespace": "batch"},
            ["list scheduling.sigs.k8s.io/podgroups in batch", "list pods in batch"],
        ),
        (
            "apiserver-triage",
            {"list_path": "/apis/apps/v1/namespaces/x/deployments"},
            ["get /readyz", "list apps/deployments in x"],
        ),
        ("apiserver-latency", {"metrics_path": "/metrics/slis"}, ["get /metrics/slis"]),
        (
            "kwok-node-consistency",
            {"lease_namespace": "leases"},
            [
                "list nodes",
                "watch nodes [when]",
                "list coordination.k8s.io/leases in leases",
                "watch coordination.k8s.io/leases in leases [when]",
            ],
        ),
        ("leader-leases", {"leases": [{"name": "l", "namespace": "n"}]}, ["get coordination.k8s.io/leases l in n"]),
        (
            "admission-dry-run",
            {"namespace": "dry", "systems": [{"system": "s", "configuration": "c", "want_labels": {"a": "b"}}]},
            ["get admissionregistration.k8s.io/mutatingwebhookconfigurations c", "create pods in dry"],
        ),
        (
            "admission-dry-run",
            {"namespace": "dry", "systems": [{"system": "k", "configuration": "c", "colocation_profiles": True}]},
            [
                "get admissionregistration.k8s.io/mutatingwebhookconfigurations c",
                "list config.koordinator.sh/clustercolocationprofiles",
                "get namespaces dry",
                "create pods in dry",
            ],
        ),
        ("webhook-cert-expiry", {"configurations": [], "serving_secrets": []}, []),
        (
            "webhook-cert-expiry",
            {"configurations": [], "read_serving_secrets": True},
            [
                "get secrets koordinator-webhook-certs in koordinator-system",
                "get secrets kruise-webhook-certs in kruise-system",
            ],
        ),
        (
            "webhook-cert-expiry",
            {"configurations": [], "cert_manager_certificates": [{"namespace": "w", "name": "c"}]},
            ["get cert-manager.io/certificates c in w"],
        ),
        (
            "kwok-pod-reconciler",
            {"namespaces": ["a", "b"]},
            [
                "list nodes",
                "list pods in a",
                "list pods in b",
                "patch pods/status in a [when]",
                "patch pods/status in b [when]",
            ],
        ),
    ],
)
def test_declarations_follow_the_params(name: str, params: dict[str, Any], want: list[str]) -> None:
    assert described(name, params) == want


def test_ls_latency_declares_its_proxy_paths_as_rbac_sees_them_and_nothing_for_plain_urls() -> None:
    endpoints = [
        {"name": "svc", "proxy_path": "/api/v1/namespaces/shop/services/https:web:443/proxy/health"},
        {"name": "pod", "proxy_path": "/api/v1/namespaces/shop/pods/web-0:8080/proxy/"},
        {"name": "url", "url": "https://shop.example/health"},
    ]
    assert described("ls-latency", {"endpoints": endpoints}) == [
        "get services/proxy https:web:443 in shop",
        "get pods/proxy web-0:8080 in shop",
        "get /version [when]",
    ]
    assert described("ls-latency", {"endpoints": endpoints[2:]}) == []


@pytest.mark.parametrize(
    ("path", "verb", "want"),
    [
        ("/api/v1/namespaces", "list", R(CORE, "namespaces", "list")),
        ("/api/v1/namespaces/kube-system", "get", R(CORE, "namespaces", "get", None, ("kube-system",))),
        ("/api/v1/nodes?limit=1", "list", R(CORE, "nodes", "list")),
        ("/api/v1/nodes/n1/proxy/healthz", "get", R(CORE, "nodes/proxy", "get", None, ("n1",))),
        ("/apis/apps/v1/namespaces/x/deployments/d", "get", R("apps", "deployments", "get", "x", ("d",))),
        ("/apis/apps/v1/namespaces/x/deployments", "list", R("apps", "deployments", "list", "x")),
        ("/api/v1/namespaces/x/pods/p/status", "get", R(CORE, "pods/status", "get", "x", ("p",))),
        ("/apis/metrics.k8s.io/v1beta1/nodes", "list", R("metrics.k8s.io", "nodes", "list")),
        ("/metrics", "get", NonResourceAccess("/metrics")),
        ("/api/v1", "get", NonResourceAccess("/api/v1")),
        ("/apis/apps/v1", "get", NonResourceAccess("/apis/apps/v1")),
    ],
)
def test_of_path_gives_the_attributes_the_api_server_authorizes(path: str, verb: Any, want: access.Access) -> None:
    assert access.of_path(path, verb) == want


@pytest.mark.parametrize(
    ("path", "public"),
    [
        ("/livez", True),
        ("/readyz/etcd", True),
        ("/version", True),
        ("/healthz", True),
        ("/metrics", False),
        ("/livezz", False),
        ("/readyzfoo", False),
    ],
)
def test_public_info_paths_are_recognised_exactly(path: str, public: bool) -> None:
    assert access.non_resource(path).public is public


def test_plan_folds_a_namespaced_grant_into_a_cluster_wide_one_and_merges_names_and_verbs() -> None:
    generated = rbac.plan(
        [
            ("a", R(CORE, "pods", "get", "ns1", ("p",))),
            ("b", R(CORE, "pods", "get", None)),
            ("c", R("apps", "deployments", "get", "ns1", ("d1",))),
            ("d", R("apps", "deployments", "get", "ns1", ("d2",))),
            ("e", R(CORE, "leases", "list", "ns2")),
            ("f", R(CORE, "leases", "get", "ns2")),
            ("g", NonResourceAccess("/readyz")),
            ("h", NonResourceAccess("/metrics", when="sometimes")),
            ("i", NonResourceAccess("/metrics")),
        ]
    )
    assert [(ns, g.rule(), g.checks, g.when) for ns, g in generated.rules()] == [
        (None, {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, ["b", "a"], []),
        (
            "ns1",
            {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["d1", "d2"], "verbs": ["get"]},
            ["c", "d"],
            [],
        ),
        ("ns2", {"apiGroups": [""], "resources": ["leases"], "verbs": ["get", "list"]}, ["f", "e"], []),
        (None, {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, ["h", "i"], []),
    ]
    assert generated.public == ("/readyz",)


def test_plan_keeps_a_situational_rule_marked_and_an_any_name_read_widens_names() -> None:
    generated = rbac.plan(
        [
            ("a", R(CORE, "endpoints", "get", "n", ("s",), when="no slice")),
            ("b", R(CORE, "services", "get", "n", ("s",))),
            ("c", R(CORE, "services", "get", "n")),
        ]
    )
    assert [(g.rule(), g.when) for _, g in generated.rules()] == [
        ({"apiGroups": [""], "resources": ["endpoints"], "resourceNames": ["s"], "verbs": ["get"]}, ["no slice"]),
        ({"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}, []),
    ]


def local() -> Settings:
    return load_settings(environment_file("local"))


def with_params(settings: Settings, name: str, params: dict[str, Any]) -> Settings:
    checks = dict(settings.checks)
    checks[name] = checks[name].model_copy(update={"params": {**checks[name].params, **params}})
    return settings.model_copy(update={"checks": checks})


def without(settings: Settings, *names: str) -> Settings:
    checks = {n: (c.model_copy(update={"enabled": False}) if n in names else c) for n, c in settings.checks.items()}
    return settings.model_copy(update={"checks": checks})


def all_rules(manifests: list[dict[str, Any]]) -> list[tuple[str | None, dict[str, Any]]]:
    return [(m["metadata"].get("namespace"), rule) for m in manifests for rule in m.get("rules", [])]


def test_outpost_rbac_prints_the_output_the_golden_file_is_written_from(capsys: pytest.CaptureFixture[str]) -> None:
    # The golden file is rbac.output(local), written by `python -m outpost.tooling.catalogue` (test_generated).
    assert main(["rbac", "--env", "local"]) == 0
    printed = capsys.readouterr().out
    assert printed == rbac.output(local())
    assert printed.startswith("# Outpost's own namespace")


def test_the_golden_output_is_valid_yaml_of_exactly_the_manifests() -> None:
    documents = [d for d in yaml.safe_load_all(GOLDEN.read_text()) if d is not None]
    assert documents == rbac.manifests() + rbac.shipped_manifests() + rbac.reconciler_manifests()


def test_admission_dry_runs_profile_is_shipped_only_while_a_case_derives_from_profiles() -> None:
    """The one object a check ships (`CheckSpec.ships`): Outpost's ClusterColocationProfile, for the check's own
    namespace, after the grants; gone with the check or its Koordinator case. The probe only lists profiles."""
    (profile,) = rbac.shipped_manifests(local())
    assert (profile["kind"], profile["metadata"]["name"]) == ("ClusterColocationProfile", "outpost-probe-dry-run")
    assert profile["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "outpost-probe"}}
    assert profile["spec"]["selector"] == {"matchLabels": {"outpost.dev/probe": "admission-dry-run"}}
    moved = rbac.shipped_manifests(with_params(local(), "admission-dry-run", {"namespace": "ops"}))
    assert moved[0]["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "ops"}}
    assert rbac.shipped_manifests(without(local(), "admission-dry-run")) == []
    openkruise_only = {
        "systems": [
            {
                "system": "openkruise",
                "configuration": "kruise-mutating-webhook-configuration",
                "want_readiness_gates": ["KruisePodReady"],
            }
        ]
    }
    assert rbac.shipped_manifests(with_params(local(), "admission-dry-run", openkruise_only)) == []
    text = rbac.output(local())
    assert text.index("kind: ClusterColocationProfile") > text.index("kind: ValidatingAdmissionPolicyBinding")
    rules = [
        rule
        for _, rule in all_rules(rbac.manifests(local()))
        if "clustercolocationprofiles" in rule.get("resources", [])
    ]
    assert rules == [
        {"apiGroups": ["config.koordinator.sh"], "resources": ["clustercolocationprofiles"], "verbs": ["list"]}
    ]


def opted_in() -> Settings:
    """local with webhook-cert-expiry reading its serving-certificate Secrets (the opt-in)."""
    return with_params(local(), "webhook-cert-expiry", {"read_serving_secrets": True})


def test_only_enabled_checks_are_granted() -> None:
    full = all_rules(rbac.manifests(opted_in()))
    reduced = all_rules(rbac.manifests(without(opted_in(), "webhook-cert-expiry", "apiserver-latency")))
    assert any(rule["resources"] == ["secrets"] for _, rule in full if "resources" in rule)
    assert not any(rule.get("resources") == ["secrets"] for _, rule in reduced)
    assert not any("nonResourceURLs" in rule for _, rule in reduced)


def test_node_proxy_only_when_a_check_needs_it_in_its_own_clusterrole_with_a_warning() -> None:
    assert not any(rule.get("resources") == ["nodes/proxy"] for _, rule in all_rules(rbac.manifests(local())))
    settings = with_params(local(), "kruise-daemon-coverage", {"probe_healthz": True})
    documents = rbac.probe_documents(settings)
    node_proxy = [d for d in documents if d.obj["metadata"]["name"] == rbac.NODE_PROXY_ROLE]
    assert [d.obj["kind"] for d in node_proxy] == ["ClusterRole", "ClusterRoleBinding"]
    assert node_proxy[0].obj["rules"] == [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]
    assert "WARNING" in node_proxy[0].comment[0]
    assert "kubelet" in node_proxy[0].comment[0]
    assert "# WARNING: nodes/proxy reaches the kubelet API" in rbac.render(documents)
    probe_role = next(
        d for d in documents if d.obj["kind"] == "ClusterRole" and d.obj["metadata"]["name"] == rbac.PROBE_ROLE
    )
    assert {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]} not in probe_role.obj["rules"]


def test_the_probe_never_writes_and_may_only_create_pods_in_its_own_namespace() -> None:
    writes = [
        (ns, rule) for ns, rule in all_rules(rbac.manifests(local())) if set(rule["verbs"]) - {"get", "list", "watch"}
    ]
    assert writes == [("outpost-probe", {"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]})]


def test_no_secret_is_granted_by_default_and_nothing_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    assert not [rule for _, rule in all_rules(rbac.manifests(local())) if "secrets" in rule.get("resources", [])]
    assert rbac.secrets_warning(local()) is None
    assert main(["rbac", "--env", "local"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "secrets" not in captured.out


def test_the_opt_in_grants_the_secrets_with_a_warning_in_the_yaml_and_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = rbac.probe_documents(opted_in())
    text = rbac.render(documents)
    assert "# WARNING (private keys): webhook-cert-expiry\n- apiGroups:\n  - ''\n  resources:\n  - secrets" in text
    assert text.count("# WARNING: a Secret GET returns the whole object, private keys included") == 2
    environment = yaml.safe_load(environment_file("local").read_text())
    environment["checks"]["webhook-cert-expiry"]["params"] = {"read_serving_secrets": True}
    config = tmp_path / "local.yaml"
    config.write_text(yaml.safe_dump(environment))
    assert main(["rbac", "--config", str(config)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "WARNING: the probe is granted get on Secrets koordinator-system/koordinator-webhook-certs, "
        "kruise-system/kruise-webhook-certs for webhook-cert-expiry: a Secret GET returns the whole object, private "
        "keys included: the probe may read the named Secrets only because an enabled check opts in "
        "(webhook-cert-expiry with read_serving_secrets); turn that off and regenerate to drop it. Without it, "
        "webhook-cert-expiry judges the caBundles (and cert-manager Certificates, which hold no key).\n"
    )
    assert "WARNING" not in captured.out.split("---")[-1]  # the instructions are not the warning
    assert "kruise-webhook-certs" in captured.out


def test_secrets_only_by_name_and_never_listed() -> None:
    secrets = [(ns, rule) for ns, rule in all_rules(rbac.manifests(opted_in())) if rule.get("resources") == ["secrets"]]
    assert secrets == [
        (
            "koordinator-system",
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["koordinator-webhook-certs"],
                "verbs": ["get"],
            },
        ),
        (
            "kruise-system",
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["kruise-webhook-certs"], "verbs": ["get"]},
        ),
    ]


def test_the_reconciler_job_is_never_granted_to_the_probe() -> None:
    probe = all_rules(rbac.manifests(local()))
    assert not any(rule.get("resources") == ["pods/status"] for _, rule in probe)
    subjects = {s["name"] for m in rbac.reconciler_manifests() for s in m.get("subjects", [])}
    assert subjects == {rbac.RECONCILER_USER}


@pytest.mark.parametrize(
    ("environment", "subject", "lines"),
    [
        (
            "dev",
            {"kind": "ServiceAccount", "name": "outpost-probe", "namespace": "outpost-probe"},
            ["kubectl create token outpost-probe --namespace outpost-probe"],
        ),
        (
            "staging",
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "outpost-probe"},
            [
                "aws eks create-access-entry --region eu-west-1 --cluster-name staging-eu",
                "--principal-arn arn:aws:iam::ACCOUNT_ID:role/outpost-staging-eu-west-1-lambdaRole",
                "--type STANDARD --kubernetes-groups outpost-probe",
            ],
        ),
        (
            "prod",
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "outpost-probe"},
            [
                "aws eks create-access-entry --region eu-west-1 --cluster-name prod-eu",
                "--principal-arn arn:aws:iam::123456789012:role/outpost-prod-probe",
            ],
        ),
        # The GKE user is the runtime service account infra/gcp creates (deploy.service_accounts), in deploy.project.
        (
            "gcp-dev",
            {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "User",
                "name": "outpost-gcp-dev-run@outpost-example.iam.gserviceaccount.com",
            },
            [
                "gcloud projects add-iam-policy-binding outpost-example",
                "--member serviceAccount:outpost-gcp-dev-run@outpost-example.iam.gserviceaccount.com",
                "--role roles/container.clusterViewer",
            ],
        ),
    ],
)
def test_each_example_environment_binds_its_cloud_identity(
    environment: str, subject: dict[str, str], lines: list[str]
) -> None:
    settings = load_settings(environment_file(environment))
    manifests = rbac.manifests(settings)
    bindings = [m for m in manifests if m["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert bindings
    assert all(b["subjects"] == [subject] for b in bindings)
    text = rbac.instructions(settings)
    assert all(line in text for line in lines), text


def test_gke_binds_the_runtime_service_account_email() -> None:
    gke = GkeAuth(mode="gke", server="https://gke.example", ca_data="x")
    settings = local().model_copy(update={"cluster": local().cluster.model_copy(update={"auth": gke})})
    email = "outpost-prod-runtime@proj.iam.gserviceaccount.com"
    bindings = [
        m
        for m in (d.obj for d in rbac.probe_documents(settings, email))
        if m["kind"] in ("RoleBinding", "ClusterRoleBinding")
    ]
    assert bindings
    assert all(
        b["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": email}] for b in bindings
    )
    assert email in rbac.instructions(settings, email)


# -- the dry-run-only policy -------------------------------------------------------------------------------------
def policy_of(manifests: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    (policy,) = [m for m in manifests if m["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [m for m in manifests if m["kind"] == "ValidatingAdmissionPolicyBinding"]
    return policy, binding


def test_the_create_right_comes_with_a_policy_refusing_the_probes_real_pod_creates() -> None:
    policy, binding = policy_of(rbac.manifests(local()))
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert policy["metadata"]["name"] == binding["metadata"]["name"] == rbac.DRY_RUN_POLICY
    assert rbac.DRY_RUN_POLICY == "outpost-probe-dry-run-only"
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"] == {
        "namespaceSelector": {
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["outpost-probe"]}]
        },
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["pods"]}],
    }
    assert spec["matchConditions"] == [
        {"name": "outpost-probe-identity", "expression": 'request.userInfo.username == "outpost-probe"'}
    ]
    (validation,) = spec["validations"]
    assert validation["expression"] == "request.dryRun"
    assert validation["reason"] == "Forbidden"
    assert "only as a dry run" in validation["message"]
    assert rbac.DRY_RUN_POLICY in validation["message"]
    assert binding["spec"] == {"policyName": rbac.DRY_RUN_POLICY, "validationActions": ["Deny"]}
    assert "paramKind" not in spec  # nothing else to install for it


def test_no_create_right_no_policy() -> None:
    manifests = rbac.manifests(without(local(), "admission-dry-run"))
    assert not [m for m in manifests if m["kind"].startswith("ValidatingAdmissionPolicy")]
    assert not [m for m in manifests if m["kind"] == "Namespace"]


def test_the_policy_follows_the_checks_namespace() -> None:
    policy, _ = policy_of(rbac.manifests(with_params(local(), "admission-dry-run", {"namespace": "dry"})))
    assert policy["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["dry"]


@pytest.mark.parametrize(
    ("environment", "expression"),
    [
        ("dev", 'request.userInfo.username == "system:serviceaccount:outpost-probe:outpost-probe"'),  # token auth
        ("staging", '"outpost-probe" in request.userInfo.groups'),  # EKS access entry group
        ("gcp-dev", 'request.userInfo.username == "outpost-gcp-dev-run@outpost-example.iam.gserviceaccount.com"'),
    ],
)
def test_the_policy_matches_the_identity_the_bindings_name(environment: str, expression: str) -> None:
    policy, _ = policy_of(rbac.manifests(load_settings(environment_file(environment))))
    assert policy["spec"]["matchConditions"][0]["expression"] == expression


def test_the_policy_kinds_have_their_api_paths() -> None:
    from outpost.kube.paths import object_path

    assert [object_path(kind, "x") for kind in rbac.ADMISSION_POLICY_KINDS.values()] == [
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/x",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/x",
    ]
