"""RBAC of Outpost's identities, generated from what the ENABLED checks declare they send (`outpost rbac`).

Each check declares its requests (`CheckSpec.access`); this turns an environment's declarations into the probe's
Roles, ClusterRoles and bindings, so what is granted is exactly what is read: read-only, by name and namespace
where known, nothing bootstrap RBAC already grants. Beyond reading only admission-dry-run's `create pods`, held
to dry runs by a ValidatingAdmissionPolicy (RBAC cannot tell a dry run from a create), opt-in Secrets and
`nodes/proxy` with a warning, and write jobs under their own identity. After the grants come the objects the
enabled checks need and no upstream install creates (`CheckSpec.ships`: admission-dry-run's
ClusterColocationProfile), so one `kubectl apply` gives the checks all they need. docs/rbac.md lists the rules.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from outpost import registry
from outpost.config import ClusterAuth, EksAuth, GkeAuth, Settings, TokenAuth, environment_file
from outpost.deploy import SERVICE, service_accounts
from outpost.kube.access import Access, NonResourceAccess
from outpost.kube.paths import Kind
from outpost.settings import DEFAULT_ENVIRONMENT, add_source_arguments, check_params, load_settings, settings_from_args

PROBE_USER = "outpost-probe"
PROBE_ROLE = "outpost-probe"
PROBE_GROUP = "outpost-probe"
"""The Kubernetes group an EKS access entry maps the probe's IAM role to (it may not start with `system:`)."""
NODE_PROXY_ROLE = "outpost-probe-node-proxy"
PROBE_NAMESPACE = "outpost-probe"
DRY_RUN_POLICY = "outpost-probe-dry-run-only"
"""The ValidatingAdmissionPolicy (and its binding) that lets the probe create pods only as dry runs."""
RECONCILER_USER = "outpost-reconciler"
RECONCILER_ROLE = "outpost-reconciler"
RECONCILER_GROUP = "outpost-reconciler"

_RBAC = "rbac.authorization.k8s.io"
_ADMISSION = "admissionregistration.k8s.io"
ADMISSION_POLICY_KINDS = {
    "ValidatingAdmissionPolicy": Kind(
        "ValidatingAdmissionPolicy", _ADMISSION, "v1", "validatingadmissionpolicies", namespaced=False
    ),
    "ValidatingAdmissionPolicyBinding": Kind(
        "ValidatingAdmissionPolicyBinding", _ADMISSION, "v1", "validatingadmissionpolicybindings", namespaced=False
    ),
}
"""The policy's kinds, for whoever applies these manifests through `outpost.kube.paths.object_path` (the sandbox)."""
_LABELS = {"app.kubernetes.io/part-of": "outpost"}
NODE_PROXY_WARNING = (
    "nodes/proxy reaches the kubelet API of every node (on real kubelets including exec and "
    "run paths): granted only because an enabled check needs it (kruise-daemon-coverage with "
    "probe_healthz); turn that off and regenerate to drop it."
)
SECRETS_WARNING = (
    "a Secret GET returns the whole object, private keys included: the probe may read the named "
    "Secrets only because an enabled check opts in (webhook-cert-expiry with read_serving_secrets); "
    "turn that off and regenerate to drop it."
)


@dataclass
class Grant:
    """One generated rule, with the checks whose declarations it serves (they are what removing it breaks)."""

    namespace: str | None
    group: str
    resource: str
    verbs: list[str]
    names: tuple[str, ...]
    checks: list[str] = field(default_factory=list)
    when: list[str] = field(default_factory=list)
    """Empty when some check sends it on every run; otherwise the situations in which it is sent."""

    def rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"apiGroups": [self.group], "resources": [self.resource]}
        if self.names:
            rule["resourceNames"] = list(self.names)
        rule["verbs"] = list(self.verbs)
        return rule


@dataclass
class UrlGrant:
    path: str
    checks: list[str] = field(default_factory=list)
    when: list[str] = field(default_factory=list)

    def rule(self) -> dict[str, Any]:
        return {"nonResourceURLs": [self.path], "verbs": ["get"]}


@dataclass(frozen=True)
class Plan:
    """The grants of one identity: resource rules by namespace (None: cluster-wide) and non-resource URLs."""

    grants: tuple[Grant, ...]
    urls: tuple[UrlGrant, ...]
    public: tuple[str, ...]
    """Declared paths every identity may already GET (bootstrap `system:public-info-viewer`): not granted."""

    def cluster_grants(self) -> list[Grant]:
        return [g for g in self.grants if g.namespace is None and g.resource != "nodes/proxy"]

    def node_proxy(self) -> list[Grant]:
        return [g for g in self.grants if g.resource == "nodes/proxy"]

    def namespaces(self) -> list[str]:
        return sorted({g.namespace for g in self.grants if g.namespace is not None})

    def in_namespace(self, namespace: str) -> list[Grant]:
        return [g for g in self.grants if g.namespace == namespace]

    def secrets(self) -> list[Grant]:
        """Grants on Secrets (opt-in only; they hold key material)."""
        return [g for g in self.grants if g.group == "" and g.resource == "secrets"]

    def rules(self) -> list[tuple[str | None, Grant | UrlGrant]]:
        """Every rule with where it lives (None: a ClusterRole), as the minimality tests remove them."""
        return [(g.namespace, g) for g in self.grants] + [(None, u) for u in self.urls]


def declared(settings: Settings, *, jobs: bool = False) -> list[tuple[str, Access]]:
    """(check, access) of every enabled check (or, with `jobs`, every enabled job), for its configured params."""
    wanted = {spec.name for spec in (registry.jobs() if jobs else registry.checks())}
    found: list[tuple[str, Access]] = []
    for name in settings.enabled_checks():
        if name in wanted:
            spec = registry.get(name)
            found += [(name, item) for item in spec.access(check_params(settings, name))]
    return found


_Key = tuple[str | None, str, str, str]
"""(namespace or None, API group, resource, verb)."""


def plan(declarations: Iterable[tuple[str, Access]]) -> Plan:
    """Merge declarations into the fewest rules that grant each exactly (see the module guarantees)."""
    # (namespace, group, resource, verb) -> names (None: any name), checks, situations
    names: dict[_Key, set[str] | None] = {}
    checks: dict[_Key, list[str]] = defaultdict(list)
    whens: dict[_Key, list[str]] = defaultdict(list)
    always: set[_Key] = set()
    urls: dict[str, UrlGrant] = {}
    url_always: set[str] = set()
    public: set[str] = set()
    for check, item in declarations:
        if isinstance(item, NonResourceAccess):
            if item.public:
                public.add(item.path)
                continue
            url_grant = urls.setdefault(item.path, UrlGrant(item.path))
            _note(url_grant.checks, url_grant.when, check, item.when)
            if not item.when:
                url_always.add(item.path)
            continue
        key: _Key = (item.namespace, item.group, item.resource, str(item.verb))
        if key in names:
            current = names[key]
            names[key] = None if current is None or not item.names else current | set(item.names)
        else:
            names[key] = set(item.names) if item.names else None
        _note(checks[key], whens[key], check, item.when)
        if not item.when:
            always.add(key)
    # A namespaced grant that the cluster-wide one of the same verb covers is redundant: fold it in.
    for key in [k for k in names if k[0] is not None]:
        wide: _Key = (None, key[1], key[2], key[3])
        if wide not in names:
            continue
        wide_names, own_names = names[wide], names[key]
        if wide_names is None or (own_names is not None and own_names <= wide_names):
            checks[wide] += [c for c in checks.pop(key) if c not in checks[wide]]
            whens[wide] += [w for w in whens.pop(key) if w not in whens[wide]]
            if key in always:
                always.add(wide)
            del names[key]
    # Verbs on the same (namespace, resource, names) share one rule.
    merged: dict[tuple[str | None, str, str, tuple[str, ...]], tuple[Grant, list[_Key]]]
    merged = {}
    for key, object_names in sorted(names.items(), key=lambda kv: (kv[0][0] or "", kv[0][1:])):
        namespace, group, resource, verb = key
        sorted_names = tuple(sorted(object_names)) if object_names else ()
        grant, keys = merged.setdefault(
            (namespace, group, resource, sorted_names), (Grant(namespace, group, resource, [], sorted_names), [])
        )
        grant.verbs.append(verb)
        keys.append(key)
        grant.checks += [c for c in checks[key] if c not in grant.checks]
    grants: list[Grant] = []
    for grant, keys in merged.values():
        grant.verbs = sorted(set(grant.verbs), key=_VERB_ORDER.index)
        if not any(key in always for key in keys):
            grant.when = list(dict.fromkeys(w for key in keys for w in whens[key]))
        grants.append(grant)
    for path, url in urls.items():
        if path in url_always:
            url.when = []
    grants.sort(key=lambda g: (g.namespace or "", g.group, g.resource, g.names))
    return Plan(tuple(grants), tuple(sorted(urls.values(), key=lambda u: u.path)), tuple(sorted(public)))


_VERB_ORDER = ["get", "list", "watch", "create", "patch", "update", "delete"]


def _note(checks: list[str], whens: list[str], check: str, when: str) -> None:
    if check not in checks:
        checks.append(check)
    if when and when not in whens:
        whens.append(when)


# Subjects ---------------------------------------------------------------------------------------------------
def subject(
    auth: ClusterAuth, *, user: str = PROBE_USER, group: str = PROBE_GROUP, gcp_service_account: str | None = None
) -> dict[str, Any]:
    """Who the bindings name, by how the environment authenticates (module docstring)."""
    if isinstance(auth, EksAuth):
        return {"apiGroup": _RBAC, "kind": "Group", "name": group}
    if isinstance(auth, GkeAuth):
        return {"apiGroup": _RBAC, "kind": "User", "name": gcp_service_account or _gcp_placeholder(user)}
    if isinstance(auth, TokenAuth):
        return {"kind": "ServiceAccount", "name": user, "namespace": PROBE_NAMESPACE}
    return {"apiGroup": _RBAC, "kind": "User", "name": user}


def _gcp_placeholder(user: str) -> str:
    return f"{user}@PROJECT_ID.iam.gserviceaccount.com"


def gcp_runtime_account(settings: Settings) -> str:
    """The e-mail of the runtime service account infra/gcp creates for this environment (the identity GKE sees
    when the functions call the cluster); PROJECT_ID stands in when the environment names no project."""
    account_id = service_accounts(settings.environment)["runtime"]
    project = settings.deploy.project if settings.deploy is not None else None
    return f"{account_id}@{project}.iam.gserviceaccount.com" if project else _gcp_placeholder(account_id)


# Manifests --------------------------------------------------------------------------------------------------
def _role(
    kind: str, name: str, namespace: str | None, grants: Sequence[Grant | UrlGrant], description: str
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(_LABELS)
    metadata["annotations"] = {"outpost.dev/description": description}
    return {"apiVersion": f"{_RBAC}/v1", "kind": kind, "metadata": metadata, "rules": [g.rule() for g in grants]}


def _service_account(who: dict[str, Any]) -> dict[str, Any]:
    """The ServiceAccount a token-authenticated `subject` names."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": who["name"], "namespace": who["namespace"], "labels": dict(_LABELS)},
    }


def _binding(kind: str, name: str, namespace: str | None, who: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(_LABELS)
    role_kind = "Role" if kind == "RoleBinding" else "ClusterRole"
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": _RBAC, "kind": role_kind, "name": name},
        "subjects": [dict(who)],
    }


@dataclass(frozen=True)
class Document:
    """One manifest, with the comment lines above it and the why of each rule (same order as `rules`)."""

    obj: dict[str, Any]
    comment: tuple[str, ...] = ()
    rule_notes: tuple[str, ...] = ()


def _notes(grants: Sequence[Grant | UrlGrant]) -> tuple[str, ...]:
    return tuple(
        ("WARNING (private keys): " if isinstance(g, Grant) and g.group == "" and g.resource == "secrets" else "")
        + ", ".join(g.checks)
        + (f" (only when {'; or '.join(g.when)})" if g.when else "")
        for g in grants
    )


def _cel_string(value: str) -> str:
    """A CEL string literal (CEL's double-quoted escapes are JSON's)."""
    return json.dumps(value)


def _identity_condition(who: dict[str, Any]) -> str:
    """CEL over `request.userInfo` that is true exactly for the subject the bindings name."""
    if who["kind"] == "Group":
        return f"{_cel_string(who['name'])} in request.userInfo.groups"
    if who["kind"] == "ServiceAccount":
        username = "system:serviceaccount:{namespace}:{name}".format(**who)
        return f"request.userInfo.username == {_cel_string(username)}"
    return f"request.userInfo.username == {_cel_string(who['name'])}"


def dry_run_policy(namespaces: Sequence[str], who: dict[str, Any]) -> list[Document]:
    """The ValidatingAdmissionPolicy and binding that refuse the probe's real pod creates in `namespaces`."""
    subject = f"{who['kind']} {who['name']}"
    message = (
        f"{subject} may create pods in {', '.join(namespaces)} only as a dry run (dryRun=All): "
        f"ValidatingAdmissionPolicy {DRY_RUN_POLICY}, generated by `outpost rbac`"
    )
    policy = {
        "apiVersion": f"{_ADMISSION}/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {
            "name": DRY_RUN_POLICY,
            "labels": dict(_LABELS),
            "annotations": {
                "outpost.dev/description": (
                    "RBAC cannot tell a dry run from a create: the probe's create pods right is for "
                    "admission-dry-run's "
                    "dryRun=All creates only, and this policy refuses any other pod create by the probe."
                )
            },
        },
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(namespaces)}
                    ]
                },
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["pods"]}
                ],
            },
            "matchConditions": [{"name": "outpost-probe-identity", "expression": _identity_condition(who)}],
            "validations": [{"expression": "request.dryRun", "message": message, "reason": "Forbidden"}],
        },
    }
    binding = {
        "apiVersion": f"{_ADMISSION}/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": DRY_RUN_POLICY, "labels": dict(_LABELS)},
        "spec": {"policyName": DRY_RUN_POLICY, "validationActions": ["Deny"]},
    }
    return [
        Document(
            policy,
            (
                f"The probe may create pods in {', '.join(namespaces)} (admission-dry-run), which RBAC cannot limit to "
                f"dry "
                "runs: this policy refuses its real creates.",
                "Needs Kubernetes 1.30+ (admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy, on by default).",
            ),
        ),
        Document(binding),
    ]


def probe_documents(settings: Settings, gcp_service_account: str | None = None) -> list[Document]:
    """The probe identity's manifests for `settings`' enabled checks."""
    generated = plan(declared(settings))
    who = subject(settings.cluster.auth, gcp_service_account=gcp_service_account or gcp_runtime_account(settings))
    docs: list[Document] = []
    creating = sorted({g.namespace for g in generated.grants if "create" in g.verbs and g.namespace})
    own = sorted(set(creating) | ({PROBE_NAMESPACE} if who["kind"] == "ServiceAccount" else set()))
    for namespace in own:
        docs.append(
            Document(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": namespace,
                        "labels": dict(_LABELS),
                        "annotations": {
                            "outpost.dev/description": (
                                "Outpost's own namespace: admission dry-run pods are created here with dryRun=All "
                                "(never "
                                "stored). Keep it empty: the probe may create pods in this namespace only, and only as "
                                "dry runs "
                                f"(ValidatingAdmissionPolicy {DRY_RUN_POLICY})."
                            )
                        },
                    },
                },
                ("Outpost's own namespace (the probe's dry-run pods; its ServiceAccount where auth is a token).",),
            )
        )
    if who["kind"] == "ServiceAccount":
        docs.append(
            Document(
                _service_account(who),
                ("The probe's ServiceAccount: its token is cluster.auth.token (kubectl create token).",),
            )
        )
    cluster_rules: list[Grant | UrlGrant] = [*generated.cluster_grants(), *generated.urls]
    if cluster_rules:
        public = ", ".join(generated.public)
        docs.append(
            Document(
                _role(
                    "ClusterRole",
                    PROBE_ROLE,
                    None,
                    cluster_rules,
                    "Outpost probe: what the enabled checks read cluster-wide, generated by `outpost rbac`.",
                ),
                (
                    f"Generated by `outpost rbac --env {settings.environment}` from the enabled checks' declarations.",
                    *(
                        (f"Not granted here (every identity may GET them: system:public-info-viewer): {public}",)
                        if public
                        else ()
                    ),
                ),
                _notes(cluster_rules),
            )
        )
        docs.append(Document(_binding("ClusterRoleBinding", PROBE_ROLE, None, who)))
    node_proxy = generated.node_proxy()
    if node_proxy:
        docs.append(
            Document(
                _role("ClusterRole", NODE_PROXY_ROLE, None, node_proxy, "WARNING: " + NODE_PROXY_WARNING),
                ("WARNING: " + NODE_PROXY_WARNING,),
                _notes(node_proxy),
            )
        )
        docs.append(Document(_binding("ClusterRoleBinding", NODE_PROXY_ROLE, None, who)))
    for namespace in generated.namespaces():
        grants = generated.in_namespace(namespace)
        secrets = [g for g in generated.secrets() if g.namespace == namespace]
        docs.append(
            Document(
                _role(
                    "Role",
                    PROBE_ROLE,
                    namespace,
                    grants,
                    f"Outpost probe: what the enabled checks read (or dry-run create) in {namespace}.",
                ),
                (f"Namespace {namespace}.", *((f"WARNING: {SECRETS_WARNING}",) if secrets else ())),
                _notes(grants),
            )
        )
        docs.append(Document(_binding("RoleBinding", PROBE_ROLE, namespace, who)))
    pod_creating = sorted(
        {
            g.namespace
            for g in generated.grants
            if g.group == "" and g.resource == "pods" and "create" in g.verbs and g.namespace
        }
    )
    if pod_creating:
        docs += dry_run_policy(pod_creating, who)
    return docs


def shipped_documents(settings: Settings) -> list[Document]:
    """What the enabled checks ship (`CheckSpec.ships`) for their configured params, each object once."""
    docs: dict[tuple[str, str, str], Document] = {}
    for name in settings.enabled_checks():
        spec = registry.get(name)
        if spec.ships is None:
            continue
        for obj in spec.ships(check_params(settings, name)):
            key = (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            docs.setdefault(
                key,
                Document(
                    obj,
                    (
                        f"{obj['kind']} {obj['metadata']['name']}: {name} needs it and no upstream install "
                        "creates it; apply it with the grants (the probe only reads it).",
                    ),
                ),
            )
    return list(docs.values())


def secrets_warning(settings: Settings) -> str | None:
    """What `outpost rbac` says on stderr when the probe is granted Secrets (None when it is not)."""
    grants = plan(declared(settings)).secrets()
    if not grants:
        return None
    names = ", ".join(f"{g.namespace}/{name}" for g in grants for name in (g.names or ("(any)",)))
    checks = ", ".join(dict.fromkeys(c for g in grants for c in g.checks))
    return (
        f"WARNING: the probe is granted get on Secrets {names} for {checks}: {SECRETS_WARNING} Without it, "
        "webhook-cert-expiry judges the caBundles (and cert-manager Certificates, which hold no key)."
    )


def reconciler_documents(settings: Settings) -> list[Document]:
    """The write identity of the enabled jobs (`kwok-pod-reconciler`): exactly what they declare."""
    generated = plan(declared(settings, jobs=True))
    if not generated.grants and not generated.urls:
        return []
    auth = settings.checks[next(n for n, _ in declared(settings, jobs=True))].cluster_auth or settings.cluster.auth
    # Never the probe's account: the write identity is a separate one (its own cluster_auth), so its GKE user is a
    # placeholder the operator replaces with that account's e-mail.
    who = subject(auth, user=RECONCILER_USER, group=RECONCILER_GROUP)
    docs: list[Document] = []
    if who["kind"] == "ServiceAccount":
        docs.append(Document(_service_account(who)))
    wide: list[Grant | UrlGrant] = [*generated.cluster_grants(), *generated.urls]
    description = (
        "kwok-pod-reconciler only: what the job declares (list nodes and Pending pods, patch "
        "pods/status). Bind to the job's own identity, never to the probe."
    )
    if wide:
        docs.append(
            Document(
                _role("ClusterRole", RECONCILER_ROLE, None, wide, description),
                ("The write job's own identity (never the probe's).",),
                _notes(wide),
            )
        )
        docs.append(Document(_binding("ClusterRoleBinding", RECONCILER_ROLE, None, who)))
    for namespace in generated.namespaces():
        grants = generated.in_namespace(namespace)
        docs.append(Document(_role("Role", RECONCILER_ROLE, namespace, grants, description), (), _notes(grants)))
        docs.append(Document(_binding("RoleBinding", RECONCILER_ROLE, namespace, who)))
    return docs


def local_settings() -> Settings:
    return load_settings(environment_file(DEFAULT_ENVIRONMENT))


def manifests(settings: Settings | None = None) -> list[dict[str, Any]]:
    """The probe's manifests as API objects (default: the `local` environment, which the sandbox applies)."""
    return [doc.obj for doc in probe_documents(settings or local_settings())]


def shipped_manifests(settings: Settings | None = None) -> list[dict[str, Any]]:
    """The objects the enabled checks ship (default: `local`); their kinds may be the systems' own (a
    ClusterColocationProfile needs Koordinator's CRDs), so whoever applies them does so once the systems are in."""
    return [doc.obj for doc in shipped_documents(settings or local_settings())]


def reconciler_manifests(settings: Settings | None = None) -> list[dict[str, Any]]:
    """The write job's manifests (default: the `local` environment)."""
    return [doc.obj for doc in reconciler_documents(settings or local_settings())]


def render(documents: Sequence[Document]) -> str:
    """Multi-document YAML, each rule preceded by a comment naming the checks it serves."""
    parts = []
    for doc in documents:
        lines = [f"# {line}" for line in doc.comment]
        obj = dict(doc.obj)
        rules = obj.pop("rules", None)
        lines.append(yaml.safe_dump(obj, sort_keys=False).rstrip("\n"))
        if rules is not None:
            lines.append("rules:")
            for rule, note in zip(rules, doc.rule_notes or ("",) * len(rules), strict=True):
                if note:
                    lines.append(f"# {note}")
                lines.append(yaml.safe_dump([rule], sort_keys=False).rstrip("\n"))
        parts.append("\n".join(lines) + "\n")
    return "---\n".join(parts)


def yaml_text(settings: Settings | None = None, gcp_service_account: str | None = None) -> str:
    chosen = settings or local_settings()
    return render(
        probe_documents(chosen, gcp_service_account) + shipped_documents(chosen) + reconciler_documents(chosen)
    )


def instructions(settings: Settings, gcp_service_account: str | None = None) -> str:
    """How the cloud identity becomes the bound subject (EKS access entry, GKE binding, token), as text."""
    auth = settings.cluster.auth
    env = settings.environment
    if isinstance(auth, EksAuth):
        region = settings.deploy.region if settings.deploy else auth.region
        principal = auth.role_arn or f"arn:aws:iam::ACCOUNT_ID:role/{SERVICE}-{env}-{region}-lambdaRole"
        return (
            "\n".join(
                [
                    f"# EKS ({auth.cluster_name}): map the Lambda functions' IAM role to the Kubernetes group "
                    f"{PROBE_GROUP!r}, which the bindings above name (an access entry with no access policy: the",
                    "# generated RBAC is all it may do).",
                    f"aws eks create-access-entry --region {auth.region} --cluster-name {auth.cluster_name} \\",
                    f"  --principal-arn {principal} \\",
                    f"  --type STANDARD --kubernetes-groups {PROBE_GROUP}",
                    *(
                        []
                        if auth.role_arn
                        else [
                            "# ACCOUNT_ID: the function role is the one `serverless deploy` creates "
                            f"({SERVICE}-{env}-{region}-lambdaRole)."
                        ]
                    ),
                    "# Jobs that write (kwok-pod-reconciler) use their own cluster_auth role, mapped to group "
                    f"{RECONCILER_GROUP!r} the same way.",
                ]
            )
            + "\n"
        )
    if isinstance(auth, GkeAuth):
        email = gcp_service_account or gcp_runtime_account(settings)
        project = (settings.deploy.project if settings.deploy is not None else None) or "PROJECT_ID"
        return (
            "\n".join(
                [
                    f"# GKE: the functions' runtime service account authenticates as the user {email};",
                    "# the bindings above name it (pass --gcp-service-account EMAIL to generate them for yours). It",
                    "# needs roles/container.clusterViewer (to reach the cluster endpoint) and nothing more in IAM:",
                    f"gcloud projects add-iam-policy-binding {project} \\",
                    f"  --member serviceAccount:{email} --role roles/container.clusterViewer",
                ]
            )
            + "\n"
        )
    if isinstance(auth, TokenAuth):
        return (
            "\n".join(
                [
                    f"# Token auth: cluster.auth.token is a token of ServiceAccount {PROBE_NAMESPACE}/{PROBE_USER}, "
                    f"e.g.",
                    f"kubectl create token {PROBE_USER} --namespace {PROBE_NAMESPACE} --duration 8760h",
                    "# (or a kubernetes.io/service-account-token Secret), stored at the token's secret reference.",
                ]
            )
            + "\n"
        )
    return (
        f"# Kubeconfig auth: the bindings name the user {PROBE_USER!r} (the sandbox's probe identity); "
        "bind your kubeconfig's user instead where it differs.\n"
    )


def register(commands: Any) -> None:
    parser = commands.add_parser("rbac", help="the probe identity's RBAC, generated from the enabled checks")
    add_source_arguments(parser)
    parser.add_argument(
        "--gcp-service-account", metavar="EMAIL", help="GKE: the runtime service account the bindings name"
    )
    parser.set_defaults(func=cmd_rbac)


def output(settings: Settings, gcp_service_account: str | None = None) -> str:
    """What `outpost rbac` prints on stdout: the manifests, then the identity's steps as a commented document
    (the repository's golden file for `local` is exactly this, written by `python -m outpost.tooling.catalogue`)."""
    steps = "\n".join(
        f"# {line}" if line and not line.startswith("#") else line
        for line in instructions(settings, gcp_service_account).splitlines()
    )
    return f"{yaml_text(settings, gcp_service_account)}---\n{steps}\n"


def cmd_rbac(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    warning = secrets_warning(settings)
    if warning:
        print(warning, file=sys.stderr)
    print(output(settings, args.gcp_service_account), end="")
    return 0
