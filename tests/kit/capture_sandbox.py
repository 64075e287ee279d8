"""The `sandbox` area of `python -m kit.capture`: a healthy sandbox as a whole, `tests/fixtures/sandbox/healthy.json`.

Nodes (the first few), their Leases and NodeMetrics; the koordinator-system and kruise-system Deployments,
DaemonSets with a few pods each, the manager pods, Services, Endpoints, EndpointSlices and Leases; the four webhook
configurations; PodGroups and a few Events; and as answers, the API server's `/livez` and `/readyz?verbose`, the
managers' health through the pod proxy and both webhook Services' `/healthz` through the service proxy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kit.captured import Answer
from outpost.cluster import Cluster
from outpost.kube import paths as kp

KOORD, KRUISE = "koordinator-system", "kruise-system"
PODS_PER_DAEMONSET = 2
NODES_KEPT = 3
EVENTS_KEPT = 6
MANAGERS = {KOORD: "koord-app=koord-manager", KRUISE: "control-plane=controller-manager"}
WEBHOOK_CONFIGURATIONS = [
    (kp.MUTATING_WEBHOOKS, "koordinator-mutating-webhook-configuration"),
    (kp.VALIDATING_WEBHOOKS, "koordinator-validating-webhook-configuration"),
    (kp.MUTATING_WEBHOOKS, "kruise-mutating-webhook-configuration"),
    (kp.VALIDATING_WEBHOOKS, "kruise-validating-webhook-configuration"),
]


class SandboxCapture:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.objects: list[tuple[dict[str, Any], kp.Kind]] = []
        self.answers: dict[str, Answer] = {}

    def listed(
        self,
        kind: kp.Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        keep: int | None = None,
        pick: Callable[[dict[str, Any]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        items = self.cluster.list(kp.collection_path(kind, namespace), label_selector=label_selector)
        items = [i for i in items if pick is None or pick(i)]
        items = sorted(items, key=lambda i: (i["metadata"].get("namespace", ""), i["metadata"]["name"]))[:keep]
        self.objects += [(item, kind) for item in items]
        return items

    def answer(self, label: str, path: str, params: list[tuple[str, str]] | None = None) -> None:
        try:
            response = self.cluster.get(path, params=params, accept="*/*", timeout=5)
            self.answers[label] = (response.status_code, response.text)
        except Exception as error:  # recorded as the capture saw it: nothing answered
            self.answers[label] = (None, f"{type(error).__name__}: {error}")

    def everything(self) -> None:
        nodes = self.listed(kp.NODES, keep=NODES_KEPT)
        names = {n["metadata"]["name"] for n in nodes}
        self.listed(kp.LEASES, "kube-node-lease", pick=lambda i: i["metadata"]["name"] in names)
        self.listed(kp.NODE_METRICS, pick=lambda i: i["metadata"]["name"] in names)
        for namespace in (KOORD, KRUISE):
            self.listed(kp.DEPLOYMENTS, namespace)
            for ds in self.listed(kp.DAEMON_SETS, namespace):
                labels = (ds.get("spec") or {}).get("selector", {}).get("matchLabels") or {}
                selector = ",".join(f"{k}={v}" for k, v in labels.items())
                self.listed(kp.PODS, namespace, label_selector=selector or None, keep=PODS_PER_DAEMONSET)
            for kind in (kp.SERVICES, kp.ENDPOINTS, kp.ENDPOINT_SLICES, kp.LEASES):
                self.listed(kind, namespace)
            for pod in self.listed(kp.PODS, namespace, label_selector=MANAGERS[namespace]):
                name = pod["metadata"]["name"]
                for path in ("/healthz", "/readyz"):
                    self.answer(f"{namespace}/{name} {path}", kp.pod_proxy(namespace, name, 8000, path))
        for kind, name in WEBHOOK_CONFIGURATIONS:
            obj = self.cluster.get_object(kp.object_path(kind, name))
            if obj is not None:
                self.objects.append((obj, kind))
        self.listed(kp.POD_GROUPS)
        self.listed(kp.EVENTS, keep=EVENTS_KEPT)
        self.answer("apiserver /livez", "/livez", [("verbose", "")])
        self.answer("apiserver /readyz", "/readyz", [("verbose", "")])
        for namespace, service in ((KOORD, "koordinator-webhook-service"), (KRUISE, "kruise-webhook-service")):
            proxied = kp.service_proxy(namespace, service, 443, "/healthz", scheme="https")
            self.answer(f"{namespace}/{service} /healthz", proxied)
