"""The process node's kubelet, its pure parts: which image runs which binary, how a pod's container becomes a
command line, environment and mounts, how a readiness probe is read, and how pod IPs map to network names.

The manifests are upstream's own (the sandbox's rendered config/ of each release), so these are the pod specs the
kubelet really meets; the running node is proven in tests/e2e/test_sandbox_systems.py.
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from outpost_sandbox import systems
from outpost_sandbox.kubelet import host, images, podnet, runtime
from outpost_sandbox.kubelet.daemon import NODE_IP, NODE_NAME, Probe

PINS = {"github.com/openkruise/kruise": "v1.8.0", "github.com/koordinator-sh/koordinator": "v1.6.0"}


@functools.cache
def upstream_deployments(install: str) -> dict[str, dict[str, Any]]:
    kinds = ("Deployment", "DaemonSet")
    return {d["metadata"]["name"]: d for d in systems.upstream_manifests(install) if d["kind"] in kinds}


def deployment(name: str, install: str) -> dict[str, Any]:
    return upstream_deployments(install)[name]


def pod_of(name: str, install: str) -> dict[str, Any]:
    """The pod the Deployment's ReplicaSet (or the DaemonSet) would create, as the API server stores it."""
    template = deployment(name, install)["spec"]["template"]
    return {
        "metadata": {
            **template["metadata"],
            "name": f"{name}-abc12",
            "namespace": deployment(name, install)["metadata"]["namespace"],
            "uid": "uid-1",
        },
        "spec": {**template["spec"], "nodeName": "outpost-sandbox-node"},
    }


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    for binary in (
        "kruise-manager",
        "kruise-daemon",
        "koord-manager",
        "koord-scheduler",
        "koord-descheduler",
        "koordlet",
    ):
        (tmp_path / binary).write_text("")
    (tmp_path / "versions.json").write_text(json.dumps(PINS))
    return tmp_path


@pytest.mark.parametrize(
    ("image", "binary", "missing"),
    [
        ("openkruise/kruise-manager:v1.8.0", "kruise-manager", None),
        ("koordinator-sh/koord-scheduler:v1.6.0", "koord-scheduler", None),
        ("openkruise/kruise-manager:v1.7.0", None, "has kruise-manager from github.com/openkruise/kruise@v1.8.0"),
        ("koordinator-sh/koord-manager", None, "the sandbox has koord-manager from"),  # no tag: latest, not the pin
        ("koordinator-sh/koordlet:v1.6.0", "koordlet", None),
        ("openkruise/kruise-daemon:v1.8.0", "kruise-daemon", None),  # config/ names the daemon's own image
        ("koordinator-sh/koordlet:v1.5.0", None, "has koordlet from github.com/koordinator-sh/koordinator@v1.6.0"),
        ("library/nginx:1.27", None, None),
    ],
)
def test_an_image_runs_the_binary_built_from_its_release_only(
    image: str, binary: str | None, missing: str | None, bin_dir: Path
) -> None:
    resolved = images.resolve(image, bin_dir)
    assert resolved.binary == (bin_dir / binary if binary else None)
    if missing is None:
        assert resolved.missing is None
    else:
        assert resolved.missing is not None
        assert missing in resolved.missing


@pytest.mark.parametrize(
    ("command", "binary"),
    [("/manager", "kruise-manager"), (None, "kruise-manager"), ("/kruise-daemon", "kruise-daemon")],
)
def test_the_command_picks_the_program_of_an_image_that_holds_two(
    command: str | None, binary: str, bin_dir: Path
) -> None:
    """The chart runs kruise-daemon from the kruise-manager image: the daemon, never kruise-manager under its name."""
    resolved = images.resolve("openkruise/kruise-manager:v1.8.0", bin_dir, command)
    assert (resolved.binary, resolved.missing) == (bin_dir / binary, None)


@pytest.mark.parametrize(
    ("image", "userland"),
    [("koordinator-sh/koordlet:v1.6.0", True), ("koordinator-sh/koord-manager:v1.6.0", False)],
)
def test_only_a_distribution_based_image_gets_the_machines_userland(image: str, userland: bool, bin_dir: Path) -> None:
    assert images.resolve(image, bin_dir).userland is userland


@pytest.mark.parametrize(
    ("install", "manager", "command", "mounts"),
    [
        ("kustomize", "kruise-controller-manager", "/manager", {"/tmp/k8s-webhook-server/serving-certs"}),
        ("kustomize", "koord-manager", "/koord-manager", set()),
        ("kustomize", "koord-scheduler", "/koord-scheduler", {"/config"}),
        ("kustomize", "koord-descheduler", "/koord-descheduler", {"/config"}),
        # The charts mount no certificate volume into kruise-manager: it writes its own to WEBHOOK_CERT_DIR's default.
        ("helm", "kruise-controller-manager", "/manager", set()),
        ("helm", "koord-manager", "/koord-manager", set()),
        ("helm", "koord-scheduler", "/koord-scheduler", {"/config"}),
        ("helm", "koord-descheduler", "/koord-descheduler", {"/config"}),
    ],
)
def test_every_upstream_manager_pod_becomes_a_launch(
    install: str, manager: str, command: str, mounts: set[str], tmp_path: Path
) -> None:
    pod = pod_of(manager, install)
    container = pod["spec"]["containers"][0]
    volumes = {v["name"]: runtime.Volume(tmp_path / v["name"]) for v in pod["spec"].get("volumes") or []}
    launch = runtime.launch_for(
        pod,
        container,
        tmp_path / "binary",
        tmp_path,
        "osbx-pod-2",
        "10.246.0.2",
        "10.245.255.1",
        24077,
        volumes,
        lambda *_args: None,
    )
    assert launch.command[0] == command
    assert launch.command[1:] == [str(a) for a in container.get("args") or []]
    assert launch.hostname == pod["metadata"]["name"]  # the leader-election identity is <hostname>_<uuid>
    assert {m.target for m in launch.mounts} == mounts
    assert (launch.env["KUBERNETES_SERVICE_HOST"], launch.env["KUBERNETES_SERVICE_PORT"]) == ("localhost", "24077")
    assert "10.246.0.2\t" + pod["metadata"]["name"] in launch.hosts
    if manager == "koord-manager":
        assert launch.env["POD_NAMESPACE"] == "koordinator-system"  # a fieldRef, resolved
        assert launch.env["WEBHOOK_PORT"] == "9876"


KOORDLET_MOUNTS = {
    "/etc/localtime",
    "/host-cgroup/",
    "/host-sys-fs/",
    "/host-var-run/",
    "/host-run/",
    "/host-var-run-koordlet/",
    "/prediction-checkpoints",
    "/host-sys/",
    "/etc/kubernetes/",
    "/host-etc-hookserver/",
    "/var/lib/kubelet",
    "/var/run/koordlet/pod-resources/",
    "/dev",
    "/metric-data/",
}


@pytest.mark.parametrize(
    ("install", "agent", "command", "mounts"),
    [
        ("helm", "koordlet", "/koordlet", KOORDLET_MOUNTS),
        ("kustomize", "koordlet", "/koordlet", KOORDLET_MOUNTS),
        ("helm", "kruise-daemon", "/kruise-daemon", {"/hostvarrun"}),
        ("kustomize", "kruise-daemon", "/kruise-daemon", {"/hostvarrun"}),
    ],
)
def test_every_upstream_node_agent_pod_becomes_a_launch_on_the_node(
    install: str, agent: str, command: str, mounts: set[str], tmp_path: Path
) -> None:
    """The agents are hostNetwork DaemonSets: the node's name, its address, and each hostPath where `host` puts it."""
    pod = pod_of(agent, install)
    assert pod["spec"]["hostNetwork"] is True
    container = pod["spec"]["containers"][0]
    kubelet_dir = tmp_path / "kubelet"
    volumes = {
        v["name"]: host.host_path(kubelet_dir, v["hostPath"]["path"])
        if "hostPath" in v
        else runtime.Volume(tmp_path / v["name"])
        for v in pod["spec"]["volumes"]
    }
    launch = runtime.launch_for(
        pod,
        container,
        tmp_path / "binary",
        tmp_path,
        podnet.NODE_NETNS,
        NODE_IP,
        NODE_IP,
        24077,
        volumes,
        lambda *_args: None,
        hostname=NODE_NAME,
    )
    assert launch.command[0] == command
    assert launch.hostname == NODE_NAME
    assert f"{NODE_IP}\t{NODE_NAME}" in launch.hosts
    assert launch.env["NODE_NAME"] == NODE_NAME
    assert {m.target for m in launch.mounts} == mounts
    by_target = {m.target: m for m in launch.mounts}
    if agent == "kruise-daemon":  # the CRI socket dir, read-only: containerd's socket is where it looks
        assert by_target["/hostvarrun"].read_only
        assert by_target["/hostvarrun"].source / "containerd" / "containerd.sock" == host.containerd_socket(kubelet_dir)
    else:
        assert by_target["/host-cgroup/"].source == Path("/sys/fs/cgroup")
        assert by_target["/host-cgroup/"].recursive  # one submount per controller


@pytest.mark.parametrize(
    ("path", "on_machine", "under_host"),
    [
        ("/sys/fs/cgroup/", "/sys/fs/cgroup", None),
        ("/sys/", "/sys", None),
        ("/dev", "/dev", None),
        ("/etc/localtime", "/etc/localtime", None),
        ("/var/run", None, "run"),
        ("/var/run/koordlet/pod-resources/", None, "run/koordlet/pod-resources"),
        ("/run/", None, "run"),
        ("/etc/kubernetes/", None, "etc/kubernetes"),
        ("/var/lib/kubelet/", None, "var/lib/kubelet"),
        ("/sysadmin", None, "sysadmin"),  # a prefix of /sys by its letters only
        ("/var/../etc/passwd", None, "etc/passwd"),  # never the machine's /etc
    ],
)
def test_a_host_path_is_the_machines_only_where_the_agents_measure_it(
    path: str, on_machine: str | None, under_host: str | None, tmp_path: Path
) -> None:
    volume = host.host_path(tmp_path, path)
    assert volume.recursive
    if on_machine:
        assert volume.source == Path(on_machine)
    else:
        assert volume.source == host.host_root(tmp_path) / str(under_host)
        assert volume.source.is_dir()


def test_the_sandbox_containerd_keeps_everything_under_the_node() -> None:
    # A short directory of its own: under pytest's tmp_path (its counter grows on a long-lived machine, and xdist
    # adds popen-gwN) the socket path passes the 107 bytes a unix socket allows, which the next test refuses.
    state = Path(tempfile.mkdtemp(prefix="osbx-", dir="/tmp"))
    try:
        config = host.containerd_config(state).read_text()
        assert f'address = "{host.containerd_socket(state)}"' in config
        paths = [
            line.split("=", 1)[1].strip().strip('"') for line in config.splitlines() if "=" in line and "/" in line
        ]
        assert paths
        assert all(p.startswith(str(state)) for p in paths)
    finally:
        shutil.rmtree(state)


def test_a_containerd_socket_path_too_long_for_unix_sockets_is_refused(tmp_path: Path) -> None:
    with pytest.raises(runtime.ContainerConfigError, match="longer than a unix socket path"):
        host.containerd_config(tmp_path / ("x" * 100))


def test_the_launch_script_mounts_shallow_paths_first_and_chroots(tmp_path: Path) -> None:
    launch = runtime.Launch(
        pod="ns/p",
        hostname="p",
        netns="osbx-pod-2",
        binary=Path("/bin/true"),
        command=["/manager", "--x"],
        env={},
        root=tmp_path / "rootfs",
        mounts=[runtime.Mount(tmp_path / "a", "/tmp/deep/certs", True), runtime.Mount(tmp_path / "b", "/config")],
        hosts="",
    )
    script = runtime._script(launch)
    lines = script.splitlines()
    assert lines[1] == "printf %s p > /proc/sys/kernel/hostname"
    tmpfs = next(i for i, line in enumerate(lines) if "tmpfs" in line)
    deep = next(i for i, line in enumerate(lines) if line.endswith("rootfs/tmp/deep/certs") and "--bind" in line)
    assert tmpfs < deep  # the volume lands on the pod's fresh /tmp, not beneath it
    assert any(line.startswith(f"{runtime.TOOLS['mount']} -o remount,bind,ro") for line in lines)
    assert lines[-1] == f'exec {runtime.TOOLS["chroot"]} {tmp_path / "rootfs"} "$@"'


@pytest.mark.parametrize(
    ("env", "expected", "error"),
    [
        ([{"name": "A", "value": "1"}], {"A": "1"}, None),
        ([{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}], {"N": "node-1"}, None),
        ([{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}], {"S": "from-secrets"}, None),
        ([{"name": "O", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k", "optional": True}}}], {}, None),
        ([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a']"}}}], None, "not supported"),
        ([{"name": "M", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k"}}}], None, "has no key k"),
    ],
)
def test_env_is_resolved_as_a_kubelet_resolves_it(
    env: list[dict[str, Any]], expected: dict[str, str] | None, error: str | None
) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"nodeName": "node-1"}}

    def lookup(kind: str, _namespace: str, name: str, _key: str) -> str | None:
        return None if name == "none" else f"from-{kind}"

    if error:
        with pytest.raises(runtime.ContainerConfigError, match=error):
            runtime.resolve_env({"env": env}, pod, "10.246.0.2", "10.245.255.1", lookup)
    else:
        assert runtime.resolve_env({"env": env}, pod, "10.246.0.2", "10.245.255.1", lookup) == expected


@pytest.mark.parametrize(
    ("install", "manager", "kind", "port", "path"),
    [
        ("kustomize", "kruise-controller-manager", "http", 8000, "/readyz"),  # `path: readyz`, made absolute
        ("kustomize", "koord-manager", "http", 8080, "/metrics"),
        ("kustomize", "koord-scheduler", "http", 10251, "/healthz"),
        ("helm", "kruise-controller-manager", "http", 8000, "/readyz"),
        ("helm", "koord-manager", "http", 8000, "/readyz"),  # the chart probes readyz where config/ probes metrics
        ("helm", "koord-scheduler", "http", 10251, "/healthz"),
    ],
)
def test_readiness_probes_of_the_upstream_managers(install: str, manager: str, kind: str, port: int, path: str) -> None:
    probe = Probe.of(deployment(manager, install)["spec"]["template"]["spec"]["containers"][0])
    assert probe is not None
    assert (probe.kind, probe.port, probe.path) == (kind, port, path)
    # Upstream's defaults for what config/ leaves out (core/v1 Probe).
    assert (probe.period, probe.timeout, probe.failure_threshold, probe.success_threshold) == (10.0, 1.0, 3, 1)


def test_a_named_port_and_a_tcp_probe() -> None:
    container = {
        "ports": [{"name": "health", "containerPort": 8000}],
        "readinessProbe": {"tcpSocket": {"port": "health"}, "periodSeconds": 2, "failureThreshold": 1},
    }
    probe = Probe.of(container)
    assert probe is not None
    assert (probe.kind, probe.port, probe.period, probe.failure_threshold) == ("tcp", 8000, 2.0, 1)
    assert Probe.of({"name": "no-probe"}) is None


@pytest.mark.parametrize(
    ("ip", "netns", "link"),
    [
        ("10.246.0.2", "osbx-pod-2", "osbxp2"),
        ("10.246.0.254", "osbx-pod-254", "osbxp254"),
    ],
)
def test_pod_networks_are_named_after_the_pod_ip(ip: str, netns: str, link: str) -> None:
    assert (podnet.netns_name(ip), podnet.host_link(ip)) == (netns, link)
    assert len(podnet.host_link(ip) + "c") <= 15  # the peer's temporary name must fit a Linux link name


@pytest.mark.parametrize("ip", ["10.246.0.1", "10.244.0.2", "10.246.1.2"])
def test_addresses_outside_the_pod_range_or_the_gateway_are_refused(ip: str) -> None:
    with pytest.raises(podnet.PodNetError, match="not in the process node's pod range"):
        podnet.netns_name(ip)
    assert ip not in podnet.allocatable()
