"""outpost.tooling.rbac: the probe's one right beyond reading is `create pods` in its own namespace, nowhere else."""

from __future__ import annotations

import yaml

from outpost.checks.admission_dry_run import AdmissionDryRunParams
from outpost.tooling import rbac


def test_create_is_granted_only_by_a_role_in_the_probe_namespace() -> None:
    granting_create = [
        (m["kind"], m["metadata"].get("namespace"))
        for m in rbac.manifests()
        for rule in m.get("rules", [])
        if "create" in rule["verbs"]
    ]
    assert granting_create == [("Role", "outpost-probe")]
    role = next(m for m in rbac.manifests() if m["kind"] == "Role" and m["metadata"]["namespace"] == "outpost-probe")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]


def test_the_namespace_comes_before_what_lives_in_it_and_the_binding_names_the_probe() -> None:
    kinds = [m["kind"] for m in rbac.manifests()]
    assert kinds.index("Namespace") < kinds.index("Role") < kinds.index("RoleBinding")
    binding = next(
        m for m in rbac.manifests() if m["kind"] == "RoleBinding" and m["metadata"]["namespace"] == "outpost-probe"
    )
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": rbac.PROBE_ROLE}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "outpost-probe"}]


def test_the_check_defaults_to_the_namespace_rbac_grants() -> None:
    assert AdmissionDryRunParams().namespace == rbac.PROBE_NAMESPACE


def test_yaml_text_holds_every_manifest() -> None:
    documents = list(yaml.safe_load_all(rbac.yaml_text()))
    assert documents == rbac.manifests() + rbac.shipped_manifests() + rbac.reconciler_manifests()
