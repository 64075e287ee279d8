"""koordlet-coverage: every schedulable node that should run a koordlet has a ready koordlet pod.

Judged node by node (`outpost.families.daemon_coverage`): when the DaemonSet stops targeting a node its counters
still read "N of N ready" while that node has no koordlet (no NodeMetric, no QoS enforcement). Upstream:
`koordinator-system/koordlet`, pods `koord-app=koordlet` (the tutorial's `app=koordlet` selects nothing),
tolerating every taint (koordinator-sh/charts versions/v1.6.0 `templates/koordlet.yaml`). Real nodes by default;
fake nodes are opt-in, since kwok's pod-ready stage makes their koordlet Ready regardless.

"Ready" is the kubelet's: koordlet has no readinessProbe (nor livenessProbe) in the chart or in config/
(`config/manager/koordlet.yaml`), so its pod is Ready whenever its container runs (k8s.io/kubernetes@v1.37.2
`pkg/kubelet/prober/prober_manager.go` UpdatePodStatus). This check proves koordlet runs on each node, not that it
works: nodemetric-freshness judges whether it reports.
"""

from __future__ import annotations

from pydantic import Field

from outpost.check import CheckSpec
from outpost.families.daemon_coverage import (
    COVERAGE_RUNBOOKS,
    DaemonCoverageParams,
    declared_access,
    evaluator,
    fetch_coverage,
)

NAME = "koordlet-coverage"
FAILS_WHEN = (
    "a schedulable node (real by default; KWOK fake and virtual opt-in) without a ready koordlet pod (names them; "
    "a node itself not Ready: degraded)"
)


class KoordletCoverageParams(DaemonCoverageParams):
    namespace: str = Field("koordinator-system", description="Namespace of the koordlet DaemonSet.")
    daemonset: str = Field("koordlet", description="Name of the koordlet DaemonSet.")
    pod_selector: str = Field("koord-app=koordlet", description="Label selector of koordlet pods.")


fetch = fetch_coverage
evaluate = evaluator(NAME, "koordlet")

RUNBOOKS = COVERAGE_RUNBOOKS

CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="node",
    severity="critical",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=KoordletCoverageParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
