"""Granting the probe what `outpost rbac` generates for a test's own configuration, for the test's duration.

The sandbox's probe holds the RBAC generated from `local.yaml`. A test that runs a check with other params
(another Deployment name, another Events API) needs what the generator gives for THOSE params, exactly as
an environment configured that way would: the generated Roles/ClusterRoles and bindings, renamed with a
suffix so they add to the baseline instead of replacing it, applied, awaited, and deleted afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from outpost.settings import load_settings
from outpost.tooling import rbac

if TYPE_CHECKING:
    from conftest import SandboxInfo

SUFFIX = "-e2e-params"


def _renamed(obj: dict[str, Any]) -> dict[str, Any]:
    renamed = {**obj, "metadata": {**obj["metadata"], "name": obj["metadata"]["name"] + SUFFIX}}
    if "roleRef" in obj:
        renamed["roleRef"] = {**obj["roleRef"], "name": obj["roleRef"]["name"] + SUFFIX}
    return renamed


def _first_rule_allowed(sandbox: SandboxInfo, obj: dict[str, Any]) -> bool:
    rule = obj["rules"][0]
    if rule.get("nonResourceURLs"):
        args = ["auth", "can-i", rule["verbs"][0], rule["nonResourceURLs"][0], "--as", rbac.PROBE_USER]
        return str(sandbox.kubectl(*args, check=False).stdout).strip() == "yes"
    resource = rule.get("resources", [""])[0]
    name = (rule.get("resourceNames") or [""])[0]
    group = (rule.get("apiGroups") or [""])[0]
    base, _, subresource = resource.partition("/")
    what = f"{base}.{group}" if group else base
    args = ["auth", "can-i", rule["verbs"][0], f"{what}/{name}" if name else what, "--as", rbac.PROBE_USER]
    args += [f"--subresource={subresource}"] if subresource else []
    namespace = obj["metadata"].get("namespace")
    args += ["-n", namespace] if namespace else []
    return str(sandbox.kubectl(*args, check=False).stdout).strip() == "yes"


@contextmanager
def probe_granted_for(sandbox: SandboxInfo, config: Path) -> Iterator[None]:
    """The probe holds, besides its baseline, the RBAC generated for `config`'s enabled checks."""
    documents = [
        _renamed(doc.obj)
        for doc in rbac.probe_documents(load_settings(config))
        if doc.obj["kind"] in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    ]
    manifest = sandbox.state_dir / f"rbac{SUFFIX}-{config.stem}.yaml"
    manifest.write_text(rbac.render([rbac.Document(obj) for obj in documents]))
    sandbox.kubectl("apply", "-f", str(manifest))
    try:
        roles = [obj for obj in documents if obj["kind"] in ("Role", "ClusterRole") and obj.get("rules")]
        deadline = time.monotonic() + 30
        while not all(_first_rule_allowed(sandbox, obj) for obj in roles):
            assert time.monotonic() < deadline, "the generated RBAC did not take effect within 30 s"
            time.sleep(0.5)
        yield
    finally:
        sandbox.kubectl("delete", "-f", str(manifest), "--ignore-not-found")
