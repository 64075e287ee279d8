#!/usr/bin/env python3
"""Renders OpenKruise's and Koordinator's own install objects for the sandbox, from their pinned release modules.

`render_upstream.py` writes outpost_sandbox/manifests/upstream/*.yaml; `--check` fails if the committed files
differ. Per system it downloads the release module pinned in versions.env and runs pinned kustomize over its
`config/default` as `make deploy` does, then applies only the overlay changes below, each with its reason. It uses
config/ rather than the Helm charts because the module zip is reachable through the Go module proxy; where
config/ holds a developer setting, the overlay takes the chart's value (charts versions/v1.6.0, kruise/1.8.0).
Needs go and the Go module proxy; output is deterministic.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE.parent / "outpost_sandbox" / "manifests" / "upstream"
Doc = dict[str, Any]


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


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    matches = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    if len(matches) != 1:
        raise SystemExit(
            f"render: expected one {kind} {name} in the kustomize output, found {len(matches)}: "
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


OPENKRUISE_CHANGES = """\
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

KOORDINATOR_CHANGES = """\
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


def openkruise_overlay(docs: list[Doc], version: str) -> None:
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


def koordinator_overlay(docs: list[Doc], version: str) -> None:
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


SYSTEMS: dict[str, tuple[str, str, Callable[[list[Doc], str], None], str]] = {
    # output file: (module, version pin, overlay, what the overlay changes)
    "openkruise.yaml": ("github.com/openkruise/kruise", "KRUISE_VERSION", openkruise_overlay, OPENKRUISE_CHANGES),
    "koordinator.yaml": (
        "github.com/koordinator-sh/koordinator",
        "KOORDINATOR_VERSION",
        koordinator_overlay,
        KOORDINATOR_CHANGES,
    ),
}


def render(out_dir: Path) -> list[Path]:
    versions = pins()
    written = []
    for filename, (module, pin, overlay, changes) in SYSTEMS.items():
        version = versions[pin]
        docs = kustomize(versions["KUSTOMIZE_VERSION"], module_dir(module, version) / "config" / "default")
        overlay(docs, version)
        header = (
            f"# Generated by infra/sandbox/go/render_upstream.py: do not edit.\n"
            f"# {module}@{version} config/default, rendered by kustomize {versions['KUSTOMIZE_VERSION']}.\n"
            + "".join(f"# {line}\n" if line else "#\n" for line in changes.splitlines())
        )
        path = out_dir / filename
        path.write_text(header + yaml.safe_dump_all(docs, sort_keys=True, width=120))
        written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed files are not what renders")
    args = parser.parse_args()
    if not args.check:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        for path in render(OUT_DIR):
            print(path)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        stale = []
        for fresh in render(Path(tmp)):
            committed = OUT_DIR / fresh.name
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
