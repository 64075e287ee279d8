"""LIST pages for the decoder benchmark (bench/decoders.py), built in memory from four captured objects.

`pages(kind, count, page_size)` turns a captured KWOK Node, koordlet Pod, NodeMetric or node Lease (bench/captured/)
into `count` varied objects serialized as the API server would (compact JSON, `continue` tokens, typed lists
without kind/apiVersion, CRD items with them). Varied (node classes, conditions, cordons, CPU forms, phases,
stale times, Koordinator v1.6 `podsMetric`), so no decoder meets only one shape; deterministic per (kind, index).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CAPTURED = Path(__file__).parent / "captured"
FILES = {"node": "node.json", "pod": "koordlet-pod.json", "nodemetric": "nodemetric.json", "lease": "node-lease.json"}
KINDS = tuple(FILES)
COUNT = 5000
PAGE_SIZES = (250, 500)
NOW = datetime(2026, 12, 5, 17, 10, 0, tzinfo=UTC)
"""The moment the synthesized collections describe (just after the capture)."""

_LIST = {  # kind -> (list kind, apiVersion, items keep kind/apiVersion)
    "node": ("NodeList", "v1", False),
    "pod": ("PodList", "v1", False),
    "nodemetric": ("NodeMetricList", "slo.koordinator.sh/v1alpha1", True),
    "lease": ("LeaseList", "coordination.k8s.io/v1", False),
}
_ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
_INSTANCE_TYPES = ("m6i.8xlarge", "c6i.4xlarge", "r6i.2xlarge", "m7g.8xlarge")
_IMAGES = (
    "registry.k8s.io/kube-proxy:v1.37.2",
    "koordinator-sh/koordlet:v1.6.0",
    "openkruise/kruise-daemon:v1.8.0",
    "registry.k8s.io/pause:3.10",
    "quay.io/prometheus/node-exporter:v1.9.1",
    "docker.io/calico/node:v3.30.0",
    "docker.io/calico/cni:v3.30.0",
    "registry.k8s.io/coredns/coredns:v1.12.0",
    "public.ecr.aws/aws-ec2/aws-node-termination-handler:v1.25.0",
    "docker.io/library/nginx:1.27",
)


def captured(kind: str) -> dict[str, Any]:
    """The captured object of `kind` (a fresh copy each call)."""
    value: dict[str, Any] = json.loads((CAPTURED / FILES[kind]).read_text())
    return value


def _stamp(moment: datetime, micro: bool = False) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _node(template: dict[str, Any], i: int, rng: random.Random) -> dict[str, Any]:
    node: dict[str, Any] = json.loads(json.dumps(template))
    name = f"n{i}"
    meta = node["metadata"]
    meta.update(
        name=name,
        uid=_uid(rng),
        resourceVersion=str(10_000 + i * 7),
        creationTimestamp=_stamp(NOW - timedelta(days=rng.randint(1, 400), seconds=rng.randint(0, 86399))),
    )
    labels = meta["labels"]
    labels["kubernetes.io/hostname"] = name
    labels["topology.kubernetes.io/zone"] = _ZONES[i % 3]
    labels["outpost.dev/pool"] = f"pool-{i % 7}"
    roll = rng.random()
    if roll < 0.2:  # a real kubelet's node
        del meta["annotations"]["kwok.x-k8s.io/node"]
        labels["type"] = "worker"
        labels["node.kubernetes.io/instance-type"] = rng.choice(_INSTANCE_TYPES)
        node["spec"] = {"podCIDR": f"10.{i // 250}.{i % 250}.0/24", "providerID": f"aws:///eu-west-1a/i-{i:017x}"}
        node["status"]["images"] = [
            {
                "names": [image, f"{image.split(':')[0]}@sha256:{rng.getrandbits(256):064x}"],
                "sizeBytes": rng.randint(5_000_000, 400_000_000),
            }
            for image in rng.sample(_IMAGES, 8)
        ]
        node["status"]["nodeInfo"].update(
            machineID=f"{rng.getrandbits(128):032x}",
            systemUUID=_uid(rng),
            bootID=_uid(rng),
            kernelVersion="6.1.134-150.224.amzn2023.x86_64",
            osImage="Amazon Linux 2023.7.20250512",
            kubeletVersion="v1.37.2",
            containerRuntimeVersion="containerd://2.0.5",
        )
    elif roll < 0.22:
        del meta["annotations"]["kwok.x-k8s.io/node"]
        labels["type"] = "virtual-kubelet"
    if rng.random() < 0.02:
        node["spec"]["unschedulable"] = True
        node["spec"].setdefault("taints", []).append(
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": _stamp(NOW)}
        )
    status = node["status"]
    cpu = rng.choice(("32", "64", "16", "15890m", "31750m", "7910m"))
    status["allocatable"]["cpu"] = cpu
    status["capacity"]["cpu"] = cpu.rstrip("m") if not cpu.endswith("m") else str(-(-int(cpu[:-1]) // 1000))
    status["addresses"] = [
        {"type": "InternalIP", "address": f"10.{i // 250}.{i % 250}.{rng.randint(2, 250)}"},
        {"type": "Hostname", "address": name},
    ]
    heartbeat = NOW - timedelta(seconds=rng.randint(0, 60))
    for condition in status["conditions"]:
        condition["lastHeartbeatTime"] = _stamp(heartbeat)
        condition["lastTransitionTime"] = _stamp(heartbeat - timedelta(hours=rng.randint(1, 2000)))
    ready = status["conditions"][0]
    roll = rng.random()
    if roll < 0.03:
        ready.update(
            status="False", reason="KubeletNotReady", message="container runtime network not ready: NetworkReady=false"
        )
    elif roll < 0.06:
        ready.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
    elif roll < 0.062:
        del status["conditions"][0]
    if rng.random() < 0.01:
        pressure = next(c for c in status["conditions"] if c["type"] == "MemoryPressure")
        pressure.update(
            status="True", reason="KubeletHasInsufficientMemory", message="kubelet has insufficient memory available"
        )
    return node


def _pod(template: dict[str, Any], i: int, rng: random.Random) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(json.dumps(template))
    meta = pod["metadata"]
    suffix = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    meta.update(
        name=f"koordlet-{suffix}-{i}",
        uid=_uid(rng),
        resourceVersion=str(20_000 + i * 3),
        creationTimestamp=_stamp(NOW - timedelta(days=rng.randint(0, 30), seconds=rng.randint(0, 86399))),
    )
    ip = f"10.{i // 250}.{i % 250}.{rng.randint(2, 250)}"
    pod["spec"]["nodeName"] = f"n{i}"
    for term in (
        pod["spec"]
        .get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms", [])
    ):
        for field in term.get("matchFields", []):
            field["values"] = [f"n{i}"]
    status = pod["status"]
    status.update(hostIP=ip, podIP=ip, hostIPs=[{"ip": ip}], podIPs=[{"ip": ip}])
    roll = rng.random()
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    if roll < 0.03:
        status["phase"] = "Pending"
        ready.update(status="False", reason="ContainersNotReady", message="containers with unready status: [koordlet]")
        status["containerStatuses"][0].update(ready=False, state={"waiting": {"reason": "ContainerCreating"}})
    elif roll < 0.05:
        ready.update(status="False", reason="ContainersNotReady", message="containers with unready status: [koordlet]")
        status["containerStatuses"][0].update(ready=False, restartCount=rng.randint(1, 40))
    elif roll < 0.055:
        status["phase"] = "Failed"
        ready.update(status="False", reason="PodFailed")
    if rng.random() < 0.005:
        meta["deletionTimestamp"] = _stamp(NOW - timedelta(seconds=rng.randint(1, 30)))
        meta["deletionGracePeriodSeconds"] = 30
    return pod


def _nodemetric(template: dict[str, Any], i: int, rng: random.Random) -> dict[str, Any]:
    metric: dict[str, Any] = json.loads(json.dumps(template))
    meta = metric["metadata"]
    meta.update(name=f"n{i}", uid=_uid(rng), resourceVersion=str(30_000 + i * 11))
    if rng.random() < 0.05:  # a fake node's NodeMetric: koord-manager's spec only, no koordlet report
        del metric["status"]
        meta["managedFields"] = meta["managedFields"][1:]
        return metric
    updated = NOW - timedelta(seconds=rng.randint(0, 90) if rng.random() < 0.97 else rng.randint(600, 86400))
    status = metric["status"]
    status["updateTime"] = _stamp(updated)
    status["nodeMetric"]["nodeUsage"]["resources"] = {
        "cpu": f"{rng.randint(50, 31000)}m",
        "memory": f"{rng.randint(1, 240)}Gi",
    }
    status["nodeMetric"]["systemUsage"] = {
        "resources": {"cpu": f"{rng.randint(50, 900)}m", "memory": f"{rng.randint(300, 3000)}Mi"}
    }
    status["nodeMetric"]["aggregatedNodeUsages"] = [
        {
            "duration": duration,
            "usage": {
                percentile: {"resources": {"cpu": f"{rng.randint(50, 31000)}m", "memory": f"{rng.randint(1, 240)}Gi"}}
                for percentile in ("p50", "p90", "p95", "p99")
            },
        }
        for duration in ("5m0s", "10m0s", "30m0s")
    ]
    status["podsMetric"] = [
        {
            "namespace": rng.choice(("default", "kube-system", "batch", "web", "data")),
            "name": f"pod-{i}-{j}",
            "podUsage": {"resources": {"cpu": f"{rng.randint(1, 4000)}m", "memory": f"{rng.randint(10, 8000)}Mi"}},
            "priority": rng.choice(("koord-prod", "koord-batch", "koord-mid")),
            "qos": rng.choice(("LS", "BE", "LSR")),
        }
        for j in range(rng.randint(10, 40))
    ]
    return metric


def _lease(template: dict[str, Any], i: int, rng: random.Random) -> dict[str, Any]:
    lease: dict[str, Any] = json.loads(json.dumps(template))
    meta = lease["metadata"]
    node_uid = _uid(rng)
    meta.update(name=f"n{i}", uid=_uid(rng), resourceVersion=str(40_000 + i * 13))
    meta["ownerReferences"][0].update(name=f"n{i}", uid=node_uid)
    entry = meta["managedFields"][0]
    entry["fieldsV1"]["f:metadata"]["f:ownerReferences"] = {".": {}, f'k:{{"uid":"{node_uid}"}}': {}}
    roll = rng.random()
    renewed = NOW - timedelta(seconds=rng.uniform(0, 10) if roll < 0.98 else rng.uniform(60, 7200))
    spec = lease["spec"]
    spec["renewTime"] = _stamp(renewed, micro=True)
    entry["time"] = _stamp(renewed)
    if i == 4321:  # the sandbox's node-lease-stale fault: a foreign day-long holder
        spec.update(holderIdentity="outpost-fault-thief", leaseDurationSeconds=86400)
    return lease


_MAKERS = {"node": _node, "pod": _pod, "nodemetric": _nodemetric, "lease": _lease}


def objects(kind: str, count: int = COUNT) -> Iterator[dict[str, Any]]:
    """`count` objects of `kind`, varied from the captured one, as LIST items."""
    template = captured(kind)
    _, _, typed = _LIST[kind]
    if not typed:
        template.pop("kind", None)
        template.pop("apiVersion", None)
    for i in range(count):
        yield _MAKERS[kind](template, i, random.Random(f"{kind}/{i}"))


def pages(kind: str, count: int = COUNT, page_size: int = 250) -> list[bytes]:
    """The LIST of `count` objects of `kind` as the API server sends it, `page_size` items a page."""
    list_kind, api_version, _ = _LIST[kind]
    items = list(objects(kind, count))
    bodies: list[bytes] = []
    for start in range(0, count, page_size):
        chunk = items[start : start + page_size]
        metadata: dict[str, Any] = {"resourceVersion": "987654"}
        remaining = count - start - len(chunk)
        if remaining:
            metadata["continue"] = f"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTg3NjU0LCJzdGFydCI6Im4{start + page_size}In0"
            metadata["remainingItemCount"] = remaining
        body = {"kind": list_kind, "apiVersion": api_version, "metadata": metadata, "items": chunk}
        bodies.append(json.dumps(body, separators=(",", ":")).encode())
    return bodies


if __name__ == "__main__":
    for each in KINDS:
        built = pages(each, COUNT, 500)
        size = sum(len(page) for page in built)
        print(
            f"{each:<11} {COUNT} objects, {len(built)} pages of 500: {size / 1e6:.1f} MB "
            f"({size / COUNT:.0f} bytes an object)"
        )
