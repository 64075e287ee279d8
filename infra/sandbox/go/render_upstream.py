#!/usr/bin/env python3
"""Renders OpenKruise's and Koordinator's install objects for the sandbox, as each install path gives them.

Two install paths, one folder each under outpost_sandbox/manifests/upstream/ (`outpost sandbox up --install`):
- `helm` (the sandbox's default, what people run): the official charts with their default values. No chart
  repository is reachable from CI's machine, so the charts' own render is committed as data: `charts/<system>.yaml`
  beside this script is `helm template` of the chart at the commit in CHARTS, default values, verbatim but for the
  CRDs (the release module's own, checked identical when the charts are rendered) and image registry hosts. Each
  object keeps helm's `# Source:` line naming the chart template it came from. `--charts DIR` re-renders them from
  checkouts of the chart repositories (needs go: helm is built from its module at HELM_VERSION).
- `kustomize` (upstream's `make deploy`): the release module's `config/default`, rendered by pinned kustomize.
Both then get the sandbox's own changes, listed in the file headers with their reasons: the agents that need a
real node (koordlet, kruise-daemon) become stand-ins, and on kustomize the names and developer settings config/
gets wrong. `--check` fails if the committed files differ from what the pins render. Needs go and the Go module
proxy; output is deterministic.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
OUT_ROOT = HERE.parent / "outpost_sandbox" / "manifests" / "upstream"
CHART_RENDERS = HERE / "charts"
HELM_VERSION = "v3.21.4"
"""helm.sh/helm/v3, built from its module only to re-render charts/ (`--charts`); the sandbox never runs it."""
KUBE_VERSION = "v1.37.2"
"""What `helm template` tells the charts the cluster runs (`--kube-version`): the sandbox's KUBERNETES_VERSION."""
Doc = dict[str, Any]


@dataclass(frozen=True)
class Chart:
    """An official chart at the commit its render in charts/ was made from."""

    repository: str
    commit: str
    path: str
    release: str
    namespace: str


CHARTS = {
    "openkruise.yaml": Chart(
        "openkruise/charts",
        "38153b0939bc8a240a5c841761095159a0f29ed3",
        "versions/kruise/1.8.0",
        "kruise",
        "kruise-system",
    ),
    "koordinator.yaml": Chart(
        "koordinator-sh/charts",
        "a1963c5d2091853f71012c6790f9d1b1364b7734",
        "versions/v1.6.0",
        "koordinator",
        "koordinator-system",
    ),
}


def pins() -> dict[str, str]:
    values = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key] = value
    return values


def module_dir(module: str, version: str) -> Path:
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"], check=True, capture_output=True, text=True
    ).stdout
    return Path(json.loads(out)["Dir"])


def kustomize(kustomize_version: str, directory: Path) -> list[Doc]:
    env = dict(os.environ, GOFLAGS="-mod=mod")
    out = subprocess.run(
        ["go", "run", f"sigs.k8s.io/kustomize/kustomize/v5@{kustomize_version}", "build", str(directory)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def release_crds(docs: list[Doc]) -> dict[str, Doc]:
    """The CRDs of config/default as kustomize renders them (its patches add e.g. OpenKruise's conversion
    webhook): the charts' are the same objects, checked when they are rendered, except that a chart may leave
    some out (OpenKruise's 1.8.0 chart has no ephemeraljobs.apps.kruise.io)."""
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "CustomResourceDefinition"}


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    matches = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    if len(matches) != 1:
        raise SystemExit(
            f"render: expected one {kind} {name} in the rendered objects, found {len(matches)}: "
            "upstream changed, re-read the overlay"
        )
    return matches[0]


def container(doc: Doc, name: str) -> Doc:
    return next(c for c in doc["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def stand_in(doc: Doc, ports: str, no_label: str) -> None:
    """A DaemonSet whose agent needs a real node (its pods are answered by the sandbox's backend daemon)."""
    template = doc["spec"]["template"]
    template["metadata"].setdefault("annotations", {})["outpost.sandbox/ports"] = ports
    terms = (
        template["spec"]
        .setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        .setdefault("nodeSelectorTerms", [{}])
    )
    for term in terms:
        term.setdefault("matchExpressions", []).append({"key": no_label, "operator": "DoesNotExist"})


def rename(docs: list[Doc], kind: str, old: str, new: str) -> None:
    find(docs, kind, old)["metadata"]["name"] = new
    for doc in docs:
        if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration") and kind == "Service":
            for webhook in doc["webhooks"]:
                service = webhook["clientConfig"].get("service") or {}
                if service.get("name") == old:
                    service["name"] = new
        for subject in doc.get("subjects") or []:
            if subject.get("kind") == kind and subject.get("name") == old:
                subject["name"] = new
        spec = (doc.get("spec") or {}).get("template", {}).get("spec", {})
        if kind == "ServiceAccount" and spec.get("serviceAccountName") == old:
            spec["serviceAccountName"] = new


# ---- kustomize: config/default -------------------------------------------------------------------
OPENKRUISE_KUSTOMIZE = """\
Changes from config/default, each for a reason:
- Deployment kruise-controller-manager: image openkruise/kruise-manager:<version> (the sandbox's kubelet runs
  the binary build.sh built from the same module for that image); replicas 2 and the manager's args and env as
  the Helm chart installs them (config/default is a developer setup: 1 replica, --v=5, feature gates
  AllAlpha=true,AllBeta=true, KUBE_CACHE_MUTATION_DETECTOR=true, which deep-copies every cached object);
  no readiness probe change.
- DaemonSet kruise-daemon: kruise-daemon needs a container runtime, so its pods are stand-ins answered by the
  sandbox's backend daemon (annotation outpost.sandbox/ports); the Helm chart's node affinity (type NotIn
  virtual-kubelet) plus a sandbox-only term that lets a fault take one node out of the DaemonSet for real.
"""

KOORDINATOR_KUSTOMIZE = """\
Changes from config/default, each for a reason:
- Names: config/default's namePrefix `koord-` renames objects that koord-manager v1.6.0 looks up by their
  unprefixed names (pkg/webhook/util/util.go, pkg/util/sloconfig/config.go); they carry the names the code and
  the Helm chart use: Service koordinator-webhook-service, koordinator-{mutating,validating}-webhook-configuration,
  ConfigMap slo-controller-config, DaemonSet and ServiceAccount koordlet.
- Images koordinator-sh/<component>:<version> (the sandbox's kubelet runs the binaries build.sh built from the
  same module); replica counts as config/default has them.
- DaemonSet koordlet: koordlet needs a real node (cgroups, a container runtime), so its pods are stand-ins
  answered by the sandbox's backend daemon, which also writes koordlet's NodeMetric status; plus a sandbox-only
  node-affinity term that lets a fault take one node out of the DaemonSet for real.
"""


def openkruise_kustomize(docs: list[Doc], version: str) -> None:
    manager = find(docs, "Deployment", "kruise-controller-manager")
    manager["spec"]["replicas"] = 2  # openkruise/charts versions/kruise/1.8.0/values.yaml manager.replicas
    main = container(manager, "manager")
    main["image"] = f"openkruise/kruise-manager:{version}"
    # openkruise/charts versions/kruise/1.8.0/templates/manager.yaml with values.yaml's defaults
    main["args"] = [
        "--enable-leader-election",
        "--metrics-addr=:8080",
        "--health-probe-addr=:8000",
        "--logtostderr=true",
        "--leader-election-namespace=kruise-system",
        "--v=4",
        "--feature-gates=ImagePullJobGate=true",
        "--sync-period=0",
    ]
    main["env"] = [env for env in main.get("env") or [] if env["name"] != "KUBE_CACHE_MUTATION_DETECTOR"]
    daemon = find(docs, "DaemonSet", "kruise-daemon")
    container(daemon, "daemon")["image"] = f"openkruise/kruise-daemon:{version}"
    not_virtual = {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}  # the chart's daemon.affinity
    required = {"nodeSelectorTerms": [{"matchExpressions": [not_virtual]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    daemon["spec"]["template"]["spec"]["affinity"] = affinity
    stand_in(daemon, "10221=kruise-daemon:health", "outpost.sandbox/no-kruise-daemon")


def koordinator_kustomize(docs: list[Doc], version: str) -> None:
    rename(docs, "Service", "koord-webhook-service", "koordinator-webhook-service")
    rename(
        docs,
        "MutatingWebhookConfiguration",
        "koord-mutating-webhook-configuration",
        "koordinator-mutating-webhook-configuration",
    )
    rename(
        docs,
        "ValidatingWebhookConfiguration",
        "koord-validating-webhook-configuration",
        "koordinator-validating-webhook-configuration",
    )
    rename(docs, "ConfigMap", "koord-slo-controller-config", "slo-controller-config")
    rename(docs, "DaemonSet", "koord-koordlet", "koordlet")
    rename(docs, "ServiceAccount", "koord-koordlet", "koordlet")
    for name, image in (
        ("koord-manager", "koord-manager"),
        ("koord-scheduler", "koord-scheduler"),
        ("koord-descheduler", "koord-descheduler"),
        ("koordlet", "koordlet"),
    ):
        kind = "DaemonSet" if name == "koordlet" else "Deployment"
        for item in find(docs, kind, name)["spec"]["template"]["spec"]["containers"]:
            item["image"] = f"koordinator-sh/{image}:{version}"
    stand_in(find(docs, "DaemonSet", "koordlet"), "9316=koordlet:metrics", "outpost.sandbox/no-koordlet")


# ---- helm: the official charts ---------------------------------------------------------------------
OPENKRUISE_HELM = """\
Changes from the chart's render, each for a reason:
- DaemonSet kruise-daemon: kruise-daemon needs a container runtime, so its pods are stand-ins answered by the
  sandbox's backend daemon (annotation outpost.sandbox/ports), plus a sandbox-only node-affinity term that lets a
  fault take one node out of the DaemonSet for real. Its image stays the chart's (kruise-daemon ships in the
  kruise-manager image): the sandbox's kubelet tells the two apart by the command.
"""

KOORDINATOR_HELM = """\
Changes from the chart's render, each for a reason:
- DaemonSet koordlet: koordlet needs a real node (cgroups, a container runtime), so its pods are stand-ins
  answered by the sandbox's backend daemon, which also writes koordlet's NodeMetric status; plus a sandbox-only
  node-affinity term that lets a fault take one node out of the DaemonSet for real.
"""


def openkruise_helm(docs: list[Doc], _version: str) -> None:
    stand_in(find(docs, "DaemonSet", "kruise-daemon"), "10221=kruise-daemon:health", "outpost.sandbox/no-kruise-daemon")


def koordinator_helm(docs: list[Doc], _version: str) -> None:
    stand_in(find(docs, "DaemonSet", "koordlet"), "9316=koordlet:metrics", "outpost.sandbox/no-koordlet")


@dataclass(frozen=True)
class System:
    module: str
    pin: str
    kustomize: Callable[[list[Doc], str], None]
    kustomize_changes: str
    helm: Callable[[list[Doc], str], None]
    helm_changes: str


SYSTEMS: dict[str, System] = {
    "openkruise.yaml": System(
        "github.com/openkruise/kruise",
        "KRUISE_VERSION",
        openkruise_kustomize,
        OPENKRUISE_KUSTOMIZE,
        openkruise_helm,
        OPENKRUISE_HELM,
    ),
    "koordinator.yaml": System(
        "github.com/koordinator-sh/koordinator",
        "KOORDINATOR_VERSION",
        koordinator_kustomize,
        KOORDINATOR_KUSTOMIZE,
        koordinator_helm,
        KOORDINATOR_HELM,
    ),
}


def _without_registry_host(image: str) -> str:
    """`host.example/org/name:tag` -> `org/name:tag`: where an image is pulled from is no fact the sandbox uses
    (its kubelet runs the binaries built from the release), and this repository names no registry."""
    first, _, rest = image.partition("/")
    return rest if rest and ("." in first or ":" in first) else image


def _split_render(text: str) -> list[str]:
    return [part for part in re.split(r"^---\s*$", text, flags=re.MULTILINE) if yaml.safe_load(part)]


def render_chart(filename: str, chart_checkout: Path, crds: dict[str, Doc]) -> str:
    """`helm template` of one chart with default values: the text committed as charts/<filename>."""
    chart = CHARTS[filename]
    head = subprocess.run(
        ["git", "-C", str(chart_checkout), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    if head != chart.commit:
        raise SystemExit(f"render: {chart_checkout} is at {head}, CHARTS pins {chart.repository}@{chart.commit}")
    out = subprocess.run(
        [
            "go",
            "run",
            f"helm.sh/helm/v3/cmd/helm@{HELM_VERSION}",
            "template",
            chart.release,
            str(chart_checkout / chart.path),
            "--namespace",
            chart.namespace,
            "--kube-version",
            KUBE_VERSION,
            "--no-hooks",  # the charts' only hook is a pre-delete Job: nothing an install creates
        ],
        check=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, GOFLAGS="-mod=mod"),
    ).stdout
    kept = []
    for part in _split_render(out):
        doc = yaml.safe_load(part)
        if doc["kind"] == "CustomResourceDefinition":
            name = doc["metadata"]["name"]
            if doc != crds.get(name):
                raise SystemExit(f"render: the chart's CRD {name} is not the release's config/default one")
            source = "\n".join(line for line in part.strip().splitlines() if line.startswith("#"))
            stub = {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "metadata": {"name": name}}
            part = f"{source}\n{yaml.safe_dump(stub, sort_keys=False)}"
        kept.append(re.sub(r"(image:\s*\"?)([^\s\"]+)", lambda m: m[1] + _without_registry_host(m[2]), part.strip()))
    header = (
        f"# `helm template {chart.release} {chart.repository}@{chart.commit} {chart.path}\n"
        f"#  --namespace {chart.namespace} --kube-version {KUBE_VERSION} --no-hooks` (helm {HELM_VERSION}),"
        " default values.\n"
        "# Written by infra/sandbox/go/render_upstream.py --charts: do not edit. Each CRD is named only: it is\n"
        "# the release's config/default one, as kustomize renders it (checked when rendered). Image registry hosts\n"
        "# left out.\n"
    )
    return header + "---\n".join(f"{part}\n" for part in kept)


def chart_objects(filename: str) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all((CHART_RENDERS / filename).read_text()) if doc]


def kustomize_install(filename: str, config_default: list[Doc], version: str) -> tuple[list[Doc], str, str]:
    """config/default with the sandbox's overlay: (objects, what they are, what the sandbox changed)."""
    system = SYSTEMS[filename]
    docs = copy.deepcopy(config_default)
    system.kustomize(docs, version)
    what = f"{system.module}@{version} config/default, rendered by kustomize {pins()['KUSTOMIZE_VERSION']}"
    return docs, what, system.kustomize_changes


def helm_install(filename: str, config_default: list[Doc], version: str) -> tuple[list[Doc], str, str]:
    """The chart's committed render, its named CRDs filled in from config/default, with the sandbox's overlay."""
    system, chart = SYSTEMS[filename], CHARTS[filename]
    crds = release_crds(config_default)
    docs = [
        copy.deepcopy(crds[doc["metadata"]["name"]]) if doc["kind"] == "CustomResourceDefinition" else doc
        for doc in chart_objects(filename)
    ]
    system.helm(docs, version)
    what = (
        f"{chart.repository}@{chart.commit} {chart.path} with default values (infra/sandbox/go/charts/{filename}); "
        f"its CRDs as {system.module}@{version} config/default has them"
    )
    return docs, what, system.helm_changes


INSTALL_RENDERERS = {"helm": helm_install, "kustomize": kustomize_install}


def render(out_root: Path) -> list[Path]:
    versions = pins()
    written = []
    for filename, system in SYSTEMS.items():
        version = versions[system.pin]
        config_default = kustomize(
            versions["KUSTOMIZE_VERSION"], module_dir(system.module, version) / "config" / "default"
        )
        for install, install_objects in INSTALL_RENDERERS.items():
            docs, what, changes = install_objects(filename, config_default, version)
            header = f"# Generated by infra/sandbox/go/render_upstream.py: do not edit.\n# {what}.\n" + "".join(
                f"# {line}\n" if line else "#\n" for line in changes.splitlines()
            )
            path = out_root / install / filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(header + yaml.safe_dump_all(docs, sort_keys=True, width=120))
            written.append(path)
    return written


def render_charts(checkouts: dict[str, Path]) -> list[Path]:
    versions = pins()
    written = []
    for filename, chart in CHARTS.items():
        system = SYSTEMS[filename]
        source = module_dir(system.module, versions[system.pin])
        crds = release_crds(kustomize(versions["KUSTOMIZE_VERSION"], source / "config" / "default"))
        path = CHART_RENDERS / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_chart(filename, checkouts[chart.repository], crds))
        written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed files are not what renders")
    parser.add_argument(
        "--charts",
        nargs=2,
        metavar=("OPENKRUISE_CHARTS", "KOORDINATOR_CHARTS"),
        type=Path,
        help="first re-render charts/ from checkouts of openkruise/charts and koordinator-sh/charts at CHARTS' commits",
    )
    args = parser.parse_args()
    if args.charts:
        for path in render_charts(dict(zip(("openkruise/charts", "koordinator-sh/charts"), args.charts, strict=True))):
            print(path)
    if not args.check:
        for path in render(OUT_ROOT):
            print(path)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        stale = []
        for fresh in render(Path(tmp)):
            committed = OUT_ROOT / fresh.relative_to(tmp)
            old = committed.read_text().splitlines(keepends=True) if committed.exists() else []
            diff = list(
                difflib.unified_diff(
                    old, fresh.read_text().splitlines(keepends=True), str(committed), f"rendered {fresh.name}", n=1
                )
            )
            if diff:
                stale.append(committed)
                sys.stdout.writelines(diff[:60])
        if stale:
            print(
                f"render_upstream: {', '.join(map(str, stale))} differ from what the pins render; "
                "run infra/sandbox/go/render_upstream.py",
                file=sys.stderr,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
