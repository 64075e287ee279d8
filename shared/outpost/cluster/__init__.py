"""The cluster seam: authentication, one HTTPS client, proxy paths and pagination.

Checks import this package and nothing else to reach a cluster.
"""

from outpost.cluster.client import Cluster, Response
from outpost.cluster.deadline import Deadline
from outpost.cluster.incremental import Collection, keep_view, read_collection, read_collections
from outpost.cluster.paths import node_proxy, pod_proxy, service_proxy
from outpost.cluster.plain import get_url
from outpost.cluster.probes import ProbeOutcome, ProbeTarget, Verdict, probe_all
from outpost.cluster.tls import TlsProbe
from outpost.cluster.writer import ClusterWriter

__all__ = [
    "Cluster",
    "ClusterWriter",
    "Collection",
    "Deadline",
    "ProbeOutcome",
    "ProbeTarget",
    "Response",
    "TlsProbe",
    "Verdict",
    "get_url",
    "keep_view",
    "node_proxy",
    "pod_proxy",
    "probe_all",
    "read_collection",
    "read_collections",
    "service_proxy",
]
