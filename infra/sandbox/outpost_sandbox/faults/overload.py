"""API server overload: Priority and Fairness rejects one subject's requests with 429 while /readyz
stays 200 (a FlowSchema and a zero-seat priority level, plus load from the backend daemon).

Guarantees: apply returns once the subject's LIST is rejected with 429 three times in a row; heal
removes both objects and returns once it is no longer rejected.
"""

from __future__ import annotations

from typing import Any

from outpost.kube.paths import FLOW_SCHEMAS, PRIORITY_LEVELS, object_path
from outpost_sandbox.backends.behaviour import (
    read_behaviour,
    write_behaviour,
)
from outpost_sandbox.backends.kube import Kube, SandboxApiError
from outpost_sandbox.faults.base import (
    APF_LOAD_USER,
    APF_NAME,
    DEFAULT_PROBE_SUBJECT,
    FaultContext,
    FaultError,
    wait_for,
)


# ---- API server overload (Priority and Fairness) ------------------------------------------------
def _subject(spec: str) -> dict[str, Any]:
    kind, _, name = spec.partition(":")
    if kind == "user" and name:
        return {"kind": "User", "user": {"name": name}}
    if kind == "group" and name:
        return {"kind": "Group", "group": {"name": name}}
    if kind == "sa" and "/" in name:
        ns, _, sa = name.partition("/")
        return {"kind": "ServiceAccount", "serviceAccount": {"namespace": ns, "name": sa}}
    raise FaultError(f"--target {spec!r}: expected user:NAME, group:NAME or sa:NAMESPACE/NAME")


def overload_apply(ctx: FaultContext) -> dict[str, Any]:
    spec = ctx.target or DEFAULT_PROBE_SUBJECT
    subject = _subject(spec)
    k = ctx.kube
    # Zero nominal seats and no borrowing: the level runs one request only while nothing else
    # of it executes; the daemon's load keeps that one seat busy, so every other request is
    # rejected with 429 at once. Health endpoints stay exempt (/readyz 200), as on a real cluster.
    k.apply(
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": APF_NAME},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 0,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        }
    )
    k.apply(
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": APF_NAME},
            "spec": {
                "matchingPrecedence": 10,
                "priorityLevelConfiguration": {"name": APF_NAME},
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": [subject, {"kind": "User", "user": {"name": APF_LOAD_USER}}],
                        "resourceRules": [
                            {
                                "verbs": ["*"],
                                "apiGroups": ["*"],
                                "resources": ["*"],
                                "namespaces": ["*"],
                                "clusterScope": True,
                            }
                        ],
                    }
                ],
            },
        }
    )
    data = read_behaviour(ctx.sdir)
    data["apf_load"] = {"user": APF_LOAD_USER}
    write_behaviour(ctx.sdir, data)
    with ctx.kube.impersonating(_impersonation(subject)) as as_subject:

        def rejected() -> bool:
            codes = [_list_status(as_subject) for _ in range(3)]
            return all(c == 429 for c in codes)

        wait_for(f"429 for {spec}'s LIST", 30, rejected)
    return {"subject": spec}


_PROBED_LIST = "/api/v1/namespaces/default/pods"


def _list_status(as_subject: Kube) -> int:
    """The status of one LIST as the subject. Priority and Fairness judges a request before authorization,
    so a subject that may not list pods there (the probe's least-privilege RBAC) still shows the fault: 429
    while it is active, 403 (admitted, then refused by RBAC) once it is healed."""
    try:
        return as_subject.raw(_PROBED_LIST, limit="1").status_code
    except SandboxApiError as error:
        if error.status in (401, 403):
            return error.status
        raise


def _impersonation(subject: dict[str, Any]) -> dict[str, str]:
    if subject["kind"] == "User":
        return {"Impersonate-User": subject["user"]["name"]}
    if subject["kind"] == "Group":
        return {"Impersonate-User": "outpost-sandbox:overload-check", "Impersonate-Group": subject["group"]["name"]}
    sa = subject["serviceAccount"]
    return {"Impersonate-User": f"system:serviceaccount:{sa['namespace']}:{sa['name']}"}


def overload_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    data = read_behaviour(ctx.sdir)
    data["apf_load"] = None
    write_behaviour(ctx.sdir, data)
    ctx.kube.delete(object_path(FLOW_SCHEMAS, APF_NAME))
    ctx.kube.delete(object_path(PRIORITY_LEVELS, APF_NAME))
    with ctx.kube.impersonating(_impersonation(_subject(undo["subject"]))) as as_subject:
        wait_for("LIST no longer rejected with 429", 30, lambda: _list_status(as_subject) != 429)
