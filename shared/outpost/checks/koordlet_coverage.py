"""koordlet-coverage: every schedulable node that should run a koordlet has a ready koordlet pod.

Judged by comparing nodes with pods (`outpost.checks.daemon_coverage`), not by the DaemonSet's
counters: when the DaemonSet stops targeting a node, `desiredNumberScheduled` shrinks with it and
"N of N ready" stays true, yet that node runs no koordlet (no NodeMetric, no QoS enforcement).
Upstream: DaemonSet `koordinator-system/koordlet`, pods labelled `koord-app=koordlet`, tolerating
every taint (`koordinator-sh/charts versions/v1.6.0/templates/koordlet.yaml`; the tutorial's
`app=koordlet` selects nothing).

Which nodes count is a parameter (`nodes`, `outpost.kube.nodes.NodeSelection`): real nodes by
default. A KWOK fake node is opt-in: koordlet cannot run on it, and the koordlet pod the DaemonSet
binds to it is made Running and Ready by kwok's pod-ready stage
(`sigs.k8s.io/kwok@v0.8.0, kustomize/stage/pod/fast/pod-ready.yaml`), so its "ready" proves nothing.
virtual-kubelet nodes run no DaemonSets and are left out. No node selected is `error` (its message
says how to opt fake nodes in); the DaemonSet absent, or desiring no pod while nodes are selected,
is `failed`.
"""

from __future__ import annotations

from pydantic import Field

from outpost.checks.base import CheckSpec
from outpost.checks.daemon_coverage import DaemonCoverageParams, declared_access, evaluator, fetch_coverage

NAME = "koordlet-coverage"


class KoordletCoverageParams(DaemonCoverageParams):
    namespace: str = Field("koordinator-system", description="Namespace of the koordlet DaemonSet.")
    daemonset: str = Field("koordlet", description="Name of the koordlet DaemonSet.")
    pod_selector: str = Field("koord-app=koordlet", description="Label selector of koordlet pods.")


fetch = fetch_coverage
evaluate = evaluator(NAME, "koordlet")


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="node",
    severity="critical",
    schedule_minutes=1,
    fails_when="a schedulable node (real by default; KWOK fake and virtual opt-in) without a ready koordlet "
    "pod (names them)",
    params=KoordletCoverageParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
