"""The proxy path builders, kept importable from the cluster seam; they live in `outpost.kube.paths`."""

from outpost.kube.paths import Scheme, node_proxy, pod_proxy, service_proxy

__all__ = ["Scheme", "node_proxy", "pod_proxy", "service_proxy"]
