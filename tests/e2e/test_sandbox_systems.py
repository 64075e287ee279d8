"""E2e: Koordinator and OpenKruise in the sandbox are the real managers, installed from upstream's own objects.

Everything is observed through the real API server (its service, pod and node proxy), mostly with the probe's own
read-only identity, so these tests also prove the probe can see what checks need; the process node's kubelet is
proven by what a cluster's kubelet does: the manager processes run as their pods (hostname, IP), are restarted when
they exit, and go when their pods go.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from sandbox_http import KRUISE_WEBHOOK_HEALTHZ, LS_WEB, age, api, dry_run_pod, get_json

from outpost.checks.admission_dry_run import MUTATED_BY, PROBE_LABEL, PROFILE_NAME
from outpost.tooling.rbac import PROBE_NAMESPACE
from outpost_sandbox import systems
from outpost_sandbox.backends import netns
from outpost_sandbox.kubelet import daemon as kubelet
from outpost_sandbox.kubelet import images, podnet
from outpost_sandbox.procs import ProcessTable

PROFILES_PATH = "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles"
KOORD_WEBHOOK_HEALTHZ = (
    "/api/v1/namespaces/koordinator-system/services/https:koordinator-webhook-service:443/proxy/healthz"
)


def pods(sb: Any, ns: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get_json(sb, f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
    return items


def test_kruise_webhook_service_healthz_is_200_empty(sandbox: Any) -> None:
    r = api(sandbox, KRUISE_WEBHOOK_HEALTHZ)
    assert (r.status_code, r.text) == (200, "")


def test_koord_webhook_service_healthz_is_200(sandbox: Any) -> None:
    assert api(sandbox, KOORD_WEBHOOK_HEALTHZ).status_code == 200


def test_koord_manager_readyz_200_and_no_healthz(sandbox: Any) -> None:
    managers = pods(sandbox, "koordinator-system", "koord-app=koord-manager")
    assert len(managers) == 2
    for pod in managers:
        base = f"/api/v1/namespaces/koordinator-system/pods/{pod['metadata']['name']}:8000/proxy"
        r = api(sandbox, base + "/readyz")
        assert (r.status_code, r.text) == (200, "ok")
        assert api(sandbox, base + "/healthz").status_code == 404


def test_kruise_manager_readyz_200_and_no_healthz(sandbox: Any) -> None:
    # kruise-manager v1.8.0 registers only a readyz check (main.go AddReadyzCheck("webhook-ready")).
    managers = pods(sandbox, "kruise-system", "control-plane=controller-manager")
    assert len(managers) == 2
    for pod in managers:
        base = f"/api/v1/namespaces/kruise-system/pods/{pod['metadata']['name']}:8000/proxy"
        assert (api(sandbox, base + "/readyz").status_code, api(sandbox, base + "/readyz").text) == (200, "ok")
        assert api(sandbox, base + "/healthz").status_code == 404
        verbose = api(sandbox, base + "/readyz?verbose")
        assert verbose.text == "[+]webhook-ready ok\nhealthz check passed\n"


def test_kruise_daemon_answers_on_every_node_through_node_proxy(sandbox: Any) -> None:
    nodes = get_json(sandbox, "/api/v1/nodes")["items"]
    daemons = pods(sandbox, "kruise-system", "control-plane=daemon")
    assert {p["spec"]["nodeName"] for p in daemons} == {n["metadata"]["name"] for n in nodes}
    names = [n["metadata"]["name"] for n in nodes]
    assert kubelet.NODE_NAME in names  # the process node runs the real kruise-daemon, the KWOK nodes stand-ins
    for node in [*names[:2], kubelet.NODE_NAME]:  # node proxy needs nodes/proxy, which the probe lacks: admin
        r = api(sandbox, f"/api/v1/nodes/{node}:10221/proxy/healthz", probe=False)
        assert (r.status_code, r.text) == (200, "ok")


def test_ls_workload_answers_through_its_service(sandbox: Any) -> None:
    r = api(sandbox, LS_WEB)
    assert r.status_code == 200
    slices = get_json(
        sandbox,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name=ls-web",
    )["items"]
    ready = [e for s in slices for e in s.get("endpoints") or [] if e["conditions"].get("ready")]
    assert len(ready) == 2  # written by the real endpointslice controller


POD_WEBHOOK_POLICIES = {  # install -> pod webhook -> (failurePolicy, timeoutSeconds) as the API server holds them
    # koordinator-sh/charts@a1963c5 versions/v1.6.0 values.yaml webhookConfiguration (failurePolicy.pods Ignore,
    # timeoutSeconds 30); openkruise/charts@38153b0 versions/kruise/1.8.0 templates/webhookconfiguration.yaml (Fail)
    # and values.yaml webhookConfiguration.timeoutSeconds 30.
    "helm": {
        "mpod.kb.io": ("Fail", 30),
        "vpod.kb.io": ("Fail", 30),
        "vpodeviction.kb.io": ("Fail", 30),
        "mpod-create.koordinator.sh": ("Ignore", 30),
        "mpod-update.koordinator.sh": ("Ignore", 30),
        "vpod.koordinator.sh": ("Ignore", 30),
    },
    # config/webhook of each release: every pod webhook Fail, no timeout (the API server's default, 10 s).
    "kustomize": dict.fromkeys(
        (
            "mpod.kb.io",
            "vpod.kb.io",
            "vpodeviction.kb.io",
            "mpod-create.koordinator.sh",
            "mpod-update.koordinator.sh",
            "vpod.koordinator.sh",
        ),
        ("Fail", 10),
    ),
}
NAMESPACE_LABELS = {  # the label by which both systems' pod webhooks leave a namespace out, or (Helm) do not
    "helm": {"koordinator-system": ("controle-plane", "koordinator"), "kruise-system": ("control-plane", "openkruise")},
    "kustomize": {
        "koordinator-system": ("control-plane", "koordinator"),
        "kruise-system": ("control-plane", "controller-manager"),
    },
}


def test_upstream_names_labels_and_ports(sandbox: Any) -> None:
    d = get_json(sandbox, "/apis/apps/v1/namespaces/koordinator-system/deployments/koord-manager")
    assert d["spec"]["selector"]["matchLabels"] == {"koord-app": "koord-manager"}
    ports = {p["containerPort"] for p in d["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports == {8000, 8080, 9876}
    ds = get_json(sandbox, "/apis/apps/v1/namespaces/koordinator-system/daemonsets/koordlet")
    assert ds["spec"]["template"]["spec"]["hostNetwork"] is True
    assert {"operator": "Exists"} in ds["spec"]["template"]["spec"]["tolerations"]
    k = get_json(sandbox, "/apis/apps/v1/namespaces/kruise-system/deployments/kruise-controller-manager")
    assert k["status"]["readyReplicas"] == 2
    kd = get_json(sandbox, "/apis/apps/v1/namespaces/kruise-system/daemonsets/kruise-daemon")
    terms = kd["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]} in terms[0]["matchExpressions"]
    for svc, ns in (("koordinator-webhook-service", "koordinator-system"), ("kruise-webhook-service", "kruise-system")):
        s = get_json(sandbox, f"/api/v1/namespaces/{ns}/services/{svc}")
        assert [(p["port"], p["targetPort"]) for p in s["spec"]["ports"]] == [(443, 9876)]
    policies: dict[str, tuple[str, int]] = {}
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for system in ("koordinator", "kruise"):
            name = f"{system}-{kind.removesuffix('webhookconfigurations')}-webhook-configuration"
            cfg = get_json(sandbox, f"/apis/admissionregistration.k8s.io/v1/{kind}/{name}")
            # Every caBundle is the one the manager wrote from its own CA.
            assert all(w["clientConfig"]["caBundle"] for w in cfg["webhooks"]), name
            assert "template" in cfg["metadata"]["annotations"], name  # the manager's Ensure keeps its template
            policies |= {w["name"]: (w["failurePolicy"], w["timeoutSeconds"]) for w in cfg["webhooks"]}
    assert {name: policies[name] for name in POD_WEBHOOK_POLICIES[sandbox.install]} == (
        POD_WEBHOOK_POLICIES[sandbox.install]
    )
    labels = {
        ns: get_json(sandbox, f"/api/v1/namespaces/{ns}")["metadata"].get("labels") or {}
        for ns in ("koordinator-system", "kruise-system")
    }
    for ns, (key, value) in NAMESPACE_LABELS[sandbox.install].items():
        assert labels[ns].get(key) == value, (ns, labels[ns])
    crds = {
        c["metadata"]["name"]
        for c in get_json(sandbox, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    }
    upstream = {
        d["metadata"]["name"]
        for d in systems.upstream_manifests(sandbox.install)
        if d["kind"] == "CustomResourceDefinition"
    }
    # 18 of OpenKruise's, 11 of Koordinator's config/crd/bases; OpenKruise's 1.8.0 chart leaves out ephemeraljobs
    assert len(upstream) == {"kustomize": 29, "helm": 28}[sandbox.install]
    assert upstream <= crds


def test_leader_leases_are_held_by_the_managers_pods(sandbox: Any) -> None:
    for deployment, (ns, selector, name) in systems.MANAGERS.items():
        lease = get_json(sandbox, f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
        assert age(lease["spec"]["renewTime"]) < 15, name
        # client-go's identity is `<hostname>_<uuid>`: the process runs with its pod's name as hostname.
        holder = lease["spec"]["holderIdentity"].rpartition("_")[0]
        assert holder in {p["metadata"]["name"] for p in pods(sandbox, ns, selector)}, (deployment, holder)
    # Renewed, not merely recent: the renewTime moves on within two retry periods (2 s each, main.go).
    path = "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager"
    before = get_json(sandbox, path)["spec"]["renewTime"]
    deadline = time.monotonic() + 12
    while get_json(sandbox, path)["spec"]["renewTime"] == before:
        assert time.monotonic() < deadline, f"kruise-manager lease not renewed since {before}"
        time.sleep(0.5)


def test_every_node_has_a_fresh_nodemetric_in_band(sandbox: Any) -> None:
    nodes = {n["metadata"]["name"]: n for n in get_json(sandbox, "/api/v1/nodes")["items"]}
    metrics = get_json(sandbox, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics")["items"]
    assert {m["metadata"]["name"] for m in metrics} >= set(nodes)
    for m in metrics:
        # koord-manager's spec (and no owner), koordlet's status (the real one's on the process node)
        assert m["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 60, m["metadata"]["name"]
        assert "ownerReferences" not in m["metadata"], m["metadata"]["name"]
        assert age(m["status"]["updateTime"]) < 180, m["metadata"]["name"]
    r = api(sandbox, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics")  # the probe can read them
    assert r.status_code == 200


def test_a_new_nodes_nodemetric_is_reported_as_soon_as_koord_manager_creates_it(sandbox: Any) -> None:
    """A node that joins after the backend daemon started (as every node of a fresh sandbox does, koord-manager
    creating its NodeMetric a moment later) is reported within seconds, not a report interval later: a freshly
    installed sandbox must not read as every node stale."""
    from outpost_sandbox import nodes
    from outpost_sandbox.backends import server
    from outpost_sandbox.backends.kube import Kube

    index = len(get_json(sandbox, "/api/v1/nodes?labelSelector=type%3Dkwok")["items"])
    node = nodes.node_manifest(index)
    name = node["metadata"]["name"]
    metric_path = f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{name}"
    with Kube.from_kubeconfig(sandbox.kubeconfig) as kube:
        assert kube.get(f"/api/v1/nodes/{name}", ok_missing=True) is None, f"node {name} already exists"
        try:
            kube.create("/api/v1/nodes", node)
            created_at = None
            reported_after = None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                metric = kube.get(metric_path, ok_missing=True)
                if metric is not None and created_at is None:
                    created_at = time.monotonic()
                if metric is not None and (metric.get("status") or {}).get("updateTime"):
                    assert created_at is not None
                    reported_after = time.monotonic() - created_at
                    break
                time.sleep(0.25)
            assert created_at is not None, f"koord-manager created no NodeMetric for {name} in 60 s"
            assert reported_after is not None, f"NodeMetric {name} not reported in 60 s"
            assert reported_after < server.NODEMETRIC_REFRESH_S / 4, (
                f"NodeMetric {name} reported {reported_after:.1f} s after it was created"
            )
        finally:
            kube.delete(f"/api/v1/nodes/{name}")
            # The DaemonSet pods kwok ran there go now, not after the pod GC's quarantine.
            for pod in kube.list("/api/v1/pods"):
                if pod["spec"].get("nodeName") == name:
                    meta = pod["metadata"]
                    kube.delete(
                        f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", {"gracePeriodSeconds": "0"}
                    )
            deadline = time.monotonic() + 60
            while kube.get(metric_path, ok_missing=True) is not None and time.monotonic() < deadline:
                time.sleep(0.5)
        assert kube.get(metric_path, ok_missing=True) is None, f"koord-manager kept NodeMetric {name} after its node"


def _gang_member(gang: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{gang}-{index}", "namespace": "default", "labels": {systems.GANG_LABEL: gang}},
        "spec": {
            "schedulerName": "koord-scheduler",
            "nodeSelector": {"type": "kwok"},
            "tolerations": [{"key": "kwok-controller/provider", "operator": "Exists"}],
            "containers": [
                {
                    "name": "w",
                    "image": "library/busybox:1.36",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


def test_a_requeued_gang_is_reconsidered_by_koord_scheduler(sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """koord-scheduler holds back the members of a gang it counts as incomplete, with no condition, and
    reconsiders them on an update of their PodGroup: what `systems.requeue_gang` relies on to free a complete gang
    held back by its informer race. The gang here is incomplete (2 of minMember 3), so once koord's PodGroup
    controller has written Pending the requeue is the only PodGroup update: the scheduler's own log shows it moving
    both members, which it holds again; the third member then completes the gang and all three are bound (requeued
    again should the third meet the same race)."""
    from outpost_sandbox.backends.kube import Kube

    gang = "e2e-requeued-gang"
    group_path = f"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups/{gang}"
    logs = sorted((sandbox.state_dir / "logs" / "pods").glob("koordinator-system_koord-scheduler-*.log"))
    assert logs, "no koord-scheduler log under the sandbox's logs/pods"

    def members(kube: Kube) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = kube.get(
            "/api/v1/namespaces/default/pods", labelSelector=f"{systems.GANG_LABEL}={gang}"
        )["items"]
        return found

    def wait(what: str, predicate: Any, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
            time.sleep(0.25)

    with Kube.from_kubeconfig(sandbox.kubeconfig) as kube:
        try:
            kube.apply(
                {
                    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": {"name": gang, "namespace": "default"},
                    "spec": {"minMember": 3},
                }
            )
            for i in range(2):
                kube.apply(_gang_member(gang, i))
            wait(
                "koord's PodGroup controller to write Pending",
                lambda: (kube.get(group_path).get("status") or {}).get("phase") == "Pending",
            )
            time.sleep(2)  # both members held by PreEnqueue; nothing else is to update the PodGroup
            assert [p["spec"].get("nodeName") for p in members(kube)] == [None, None]
            offsets = {log: log.stat().st_size for log in logs}
            monkeypatch.setattr(systems, "GANG_REQUEUE_S", 0.0)
            assert systems.requeuing(kube, "default", gang, lambda: False)() is False
            assert systems.REQUEUE_ANNOTATION in kube.get(group_path)["metadata"].get("annotations", {})

            def moved() -> set[str]:
                text = "".join(log.read_bytes()[offsets[log] :].decode(errors="replace") for log in logs)
                return {
                    f"{gang}-{i}"
                    for i in range(2)
                    if f'"Pod moved to an internal scheduling queue" pod="default/{gang}-{i}" '
                    'event="PodgroupsUpdate"' in text
                }

            wait("koord-scheduler to move both held members on the PodGroup update", lambda: len(moved()) == 2)
            assert [p["spec"].get("nodeName") for p in members(kube)] == [None, None], "an incomplete gang was bound"
            kube.apply(_gang_member(gang, 2))
            # The third member can meet the same informer race (the scheduler's gang cache counts 2 when it
            # reaches PreEnqueue): what the sandbox does about it everywhere, a requeue while it is held.
            monkeypatch.setattr(systems, "GANG_REQUEUE_S", 5.0)
            wait(
                "the completed gang bound",
                systems.requeuing(
                    kube,
                    "default",
                    gang,
                    lambda: len(members(kube)) == 3 and all(p["spec"].get("nodeName") for p in members(kube)),
                ),
                timeout=60,
            )
        finally:
            for pod in members(kube):
                kube.delete(f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}", {"gracePeriodSeconds": "0"})
            kube.delete(group_path)
            wait(f"the members of {gang} gone", lambda: not members(kube), timeout=60)


def test_admission_dry_run_is_mutated_by_both_real_webhooks(sandbox: Any) -> None:
    # Koordinator: Outpost's ClusterColocationProfile selects it (the probe's namespace and the probe label), as
    # koord-manager writes it: github.com/koordinator-sh/koordinator@v1.6.0
    # pkg/webhook/pod/mutating/cluster_colocation_profile.go; OpenKruise: a CloneSet controls it.
    probe = {PROBE_LABEL: "admission-dry-run"}
    pod = dry_run_pod(sandbox, probe, owner=systems.DRY_RUN_OWNER, namespace=PROBE_NAMESPACE)
    labels = pod["metadata"]["labels"]
    assert (labels["koordinator.sh/qosClass"], labels[MUTATED_BY]) == ("LS", PROFILE_NAME)
    assert pod["metadata"]["annotations"][MUTATED_BY] == PROFILE_NAME
    assert "koordinator.sh/priority" not in labels
    assert not pod["spec"].get("priorityClassName")
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "64Mi"}
    assert {"conditionType": "KruisePodReady"} in pod["spec"]["readinessGates"]
    # No other pod: unlabelled in the probe's namespace, labelled in another, opted in to colocation the old way.
    for labels_sent, namespace in (
        ({"app": "not-opted-in"}, PROBE_NAMESPACE),
        ({"koordinator.sh/enable-colocation": "true"}, PROBE_NAMESPACE),
        (probe, "outpost-sandbox"),
        (probe, "default"),
    ):
        plain = dry_run_pod(sandbox, labels_sent, namespace=namespace)
        assert "koordinator.sh/qosClass" not in plain["metadata"]["labels"], (labels_sent, namespace)
        assert MUTATED_BY not in plain["metadata"]["labels"], (labels_sent, namespace)
        assert not plain["spec"].get("readinessGates")


def test_the_only_colocation_profile_is_outposts_own(sandbox: Any) -> None:
    names = [p["metadata"]["name"] for p in get_json(sandbox, PROFILES_PATH)["items"]]
    assert names == [PROFILE_NAME]
    # be-batch is a BE gang of koord-scheduler by its own spec, with no profile selecting it
    deployment = get_json(sandbox, "/apis/apps/v1/namespaces/default/deployments/be-batch")
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
    assert (template["spec"]["schedulerName"], template["spec"]["priorityClassName"]) == (
        "koord-scheduler",
        "koord-batch",
    )
    for pod in pods(sandbox, "default", "app=be-batch"):
        assert (pod["spec"]["schedulerName"], pod["metadata"]["labels"]["koordinator.sh/qosClass"]) == (
            "koord-scheduler",
            "BE",
        )
        assert MUTATED_BY not in pod["metadata"]["labels"]


def test_uninstall_removes_network_and_install_restores(sandbox: Any) -> None:
    try:
        systems.uninstall(sandbox.state_dir)
        assert systems.daemon_pid(sandbox.state_dir) is None
        assert systems.daemon_pid(sandbox.state_dir, systems.KUBELET) is None
        assert not list((sandbox.state_dir / "kubelet" / "run").glob("*.json"))  # no manager process left
        assert podnet.existing() == []
        assert podnet.NODE_NETNS not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert not Path("/sys/fs/cgroup/cpu/kubepods").exists()  # the node's cgroups go with it
        assert not list((sandbox.state_dir / "kubelet" / "node-run").glob("*.json"))  # containerd stopped too
        assert not netns.exists()
        links = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout
        assert netns.HOST_IF not in {link["ifname"] for link in json.loads(links)}
        routes = subprocess.run(["ip", "route", "show"], capture_output=True, text=True, check=True).stdout
        assert not any(cidr in routes for cidr in netns.OWNED_CIDRS)
        # No request through the proxy here: with the routes gone the API server would dial pod
        # IPs via the default route, i.e. off this machine.
        systems.uninstall(sandbox.state_dir)  # idempotent
    finally:
        systems.install(sandbox.kubeconfig, sandbox.state_dir, log=lambda _m: None)
    systems.install(sandbox.kubeconfig, sandbox.state_dir, log=lambda _m: None)  # idempotent
    assert (api(sandbox, KRUISE_WEBHOOK_HEALTHZ).status_code, netns.exists()) == (200, True)
    assert systems.running(sandbox.state_dir)


def test_a_second_sandbox_is_refused_by_name(sandbox: Any, tmp_path: Any) -> None:
    with pytest.raises(systems.SystemsError, match=str(sandbox.state_dir.resolve())):
        systems.install(sandbox.kubeconfig, tmp_path, log=lambda _m: None)
    systems.uninstall(tmp_path)  # must leave the running sandbox's network alone
    assert netns.exists()
    assert api(sandbox, KRUISE_WEBHOOK_HEALTHZ).status_code == 200


def test_network_plan_matches_the_launcher() -> None:
    import ipaddress

    from outpost_sandbox import nodes

    assert netns.POD_CIDR == nodes.POD_CIDR
    assert str(nodes.NODE_IP_BASE) + "/16" == netns.NODE_CIDR
    # The process node's pods have networks of their own, outside kwok's pool and the backend network's ranges;
    # its own address is a node address, which its own network takes from the backend's (the real agents answer it).
    owned = [ipaddress.ip_network(cidr) for cidr in netns.OWNED_CIDRS]
    assert not any(podnet.POD_RANGE.overlaps(cidr) for cidr in owned)
    assert ipaddress.ip_address(kubelet.NODE_IP) in ipaddress.ip_network(netns.NODE_CIDR)


# ---- the process node ------------------------------------------------------------------------------------------
def manager_processes(sandbox: Any) -> dict[str, int]:
    """pod name -> pid of its container process, from the process node's records (pid and start time checked)."""
    table = ProcessTable(sandbox.state_dir / "kubelet" / "run", sandbox.state_dir / "logs" / "pods")
    found = {}
    for record in (sandbox.state_dir / "kubelet" / "run").glob("*.json"):
        pid = table.pid(record.stem)
        if pid is not None:
            found[record.stem.partition("_")[2]] = pid
    return found


def test_every_manager_pod_runs_its_release_binary_on_the_process_node(sandbox: Any) -> None:
    processes = manager_processes(sandbox)
    for _deployment, (ns, selector, _lease) in systems.MANAGERS.items():
        for pod in pods(sandbox, ns, selector):
            name = pod["metadata"]["name"]
            assert pod["spec"]["nodeName"] == kubelet.NODE_NAME, name
            assert pod["status"]["podIP"].startswith("10.246.0."), name
            pid = processes[name]
            container = pod["spec"]["containers"][0]
            # The binary build.sh built for the image, seen at the container's command path in the pod's own root.
            binary = sandbox.bin_dir / images.RUNNABLE[container["image"].rpartition(":")[0]][0]
            assert os.stat(f"/proc/{pid}/exe").st_ino == binary.stat().st_ino, (name, container["image"])
            assert os.readlink(f"/proc/{pid}/exe").endswith(f"/rootfs{container['command'][0]}"), name
            assert Path(f"/proc/{pid}/root").resolve() != Path("/"), name  # chrooted into the pod's root


def test_the_kubelet_restarts_a_manager_that_exits(sandbox: Any) -> None:
    pod = pods(sandbox, "koordinator-system", "koord-app=koord-descheduler")[0]  # 1 replica on config/, 2 on the chart
    name, restarts = pod["metadata"]["name"], pod["status"]["containerStatuses"][0]["restartCount"]
    os.kill(manager_processes(sandbox)[name], signal.SIGKILL)

    def restarted_and_ready() -> bool:
        now = get_json(sandbox, f"/api/v1/namespaces/koordinator-system/pods/{name}")["status"]
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in now.get("conditions") or [])
        return bool(now["containerStatuses"][0]["restartCount"] > restarts and ready)

    deadline = time.monotonic() + 60
    while not restarted_and_ready():
        assert time.monotonic() < deadline, f"{name} not restarted and Ready within 60 s"
        time.sleep(1)
    last = get_json(sandbox, f"/api/v1/namespaces/koordinator-system/pods/{name}")["status"]["containerStatuses"][0]
    assert last["lastState"]["terminated"]["exitCode"] == 137


AGENTS = {  # the process node's real node agents: DaemonSet -> (namespace, selector, binary)
    "koordlet": ("koordinator-system", "koord-app=koordlet", "koordlet"),
    "kruise-daemon": ("kruise-system", "control-plane=daemon", "kruise-daemon"),
}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_the_process_nodes_agents_are_the_release_binaries_in_the_nodes_network(sandbox: Any, agent: str) -> None:
    ns, selector, binary = AGENTS[agent]
    [pod] = [p for p in pods(sandbox, ns, selector) if p["spec"]["nodeName"] == kubelet.NODE_NAME]
    name = pod["metadata"]["name"]
    assert pod["status"]["podIP"] == kubelet.NODE_IP  # hostNetwork: the node's address
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"]), name
    pid = manager_processes(sandbox)[name]
    assert os.stat(f"/proc/{pid}/exe").st_ino == (sandbox.bin_dir / binary).stat().st_ino
    assert podnet.in_namespace(pid, podnet.NODE_NETNS)
    assert Path(f"/proc/{pid}/root").resolve() != Path("/")


def test_the_real_koordlet_reports_its_nodes_nodemetric_from_the_kubelets_pods(sandbox: Any) -> None:
    """koordlet writes the process node's NodeMetric itself (the backend writes only the KWOK nodes'), which it
    does only once it has listed its pods from the node's kubelet API (authorized by its own ServiceAccount's
    nodes/proxy), and koord-manager derives the node's batch resources from it."""
    path = f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{kubelet.NODE_NAME}?showManagedFields=true"
    metric = get_json(sandbox, path)
    writers = {(m["manager"], m.get("subresource")) for m in metric["metadata"]["managedFields"]}
    assert ("koordlet", "status") in writers
    assert not any(manager == "outpost-sandbox" for manager, _ in writers)
    assert age(metric["status"]["updateTime"]) < 180
    assert metric["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"].endswith("m")
    node = get_json(sandbox, f"/api/v1/nodes/{kubelet.NODE_NAME}")
    assert int(node["status"]["allocatable"]["kubernetes.io/batch-cpu"]) > 0


def test_the_kubelet_api_refuses_a_caller_without_nodes_proxy(sandbox: Any) -> None:
    """The probe identity may not read the node's pods from the kubelet (no nodes/proxy); the admin may."""
    probe = api(sandbox, f"/api/v1/nodes/{kubelet.NODE_NAME}:10250/proxy/pods/")
    assert probe.status_code == 403  # refused by the API server already
    admin = api(sandbox, f"/api/v1/nodes/{kubelet.NODE_NAME}:10250/proxy/pods/", probe=False)
    assert admin.status_code == 200
    names = {p["metadata"]["name"] for p in admin.json()["items"]}
    assert any(n.startswith("koordlet-") for n in names)
