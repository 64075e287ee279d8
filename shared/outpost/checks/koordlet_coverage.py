"""koordlet-coverage: every schedulable node that should run a koordlet has a ready koordlet pod.

Judged by comparing nodes with pods (`outpost.checks.daemon_coverage`), not by the DaemonSet's
counters: when the DaemonSet stops targeting a node, `desiredNumberScheduled` shrinks with it and
"N of N ready" stays true, yet that node runs no koordlet (no NodeMetric, no QoS enforcement).
Upstream: DaemonSet `koordinator-system/koordlet`, pods labelled `koord-app=koordlet` (the
tutorial's `app=koordlet` selects nothing). Which nodes count is a parameter: real and KWOK fake
nodes by default, counted apart in `details`; virtual-kubelet nodes run no DaemonSets and are left
out. No node selected is `error`; the DaemonSet absent, or desiring no pod while nodes are
selected, is `failed`.
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
    schedule_minutes=5,
    fails_when="a schedulable node (real and KWOK fake by default, virtual excluded) without a ready koordlet "
               "pod (names them)",
    params=KoordletCoverageParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
