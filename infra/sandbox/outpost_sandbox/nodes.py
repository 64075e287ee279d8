"""The network plan and the fake nodes: pod, node and service ranges, and the Node objects kwok simulates.

Shared with `outpost_sandbox.backends` (which routes the same ranges), so every fake node gets a distinct
InternalIP the backends answer on, and only pods meant for fake nodes land there (their taint).
"""

from __future__ import annotations

import ipaddress
from typing import Any

POD_CIDR = "10.244.0.0/16"
NODE_IP_BASE = ipaddress.IPv4Address("10.245.0.0")
SERVICE_CIDR = "10.96.0.0/16"
# Written only into the `kubernetes` Endpoints (the API server rejects loopback there); the API
# server binds 127.0.0.1, and nothing in the sandbox dials this address. Reserved: no fake node
# gets it (nodes count up from 10.245.0.1).
ADVERTISE_ADDRESS = "10.245.255.254"

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
FAKE_NODE_TAINT = {"key": "kwok-controller/provider", "value": "fake", "effect": "NoSchedule"}
"""kwok's own fake node carries it (sigs.k8s.io/kwok@v0.8.0 test/kwok/fake-node.yaml), so that only pods meant for
fake nodes land there: upstream's manager Deployments tolerate nothing, and the scheduler puts them on the process
node (outpost_sandbox.kubelet), whose kubelet runs them."""
NODE_PREFIX = "kwok-node-"


def node_name(index: int) -> str:
    return f"{NODE_PREFIX}{index}"


def node_ip(index: int) -> str:
    return str(NODE_IP_BASE + index + 1)


def node_manifest(index: int) -> dict[str, Any]:
    """A fake node as kwok expects it: the annotation selects it for kwok, the address is ours.

    Status is sent on create (as a kubelet registering itself does); kwok's node-initialize stage
    keeps an InternalIP already present, so every node gets a distinct 10.245.x.y.
    """
    name = node_name(index)
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
            },
        },
        "spec": {"taints": [dict(FAKE_NODE_TAINT)]},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": node_ip(index)},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": dict(resources),
            "capacity": dict(resources),
        },
    }
