"""Outpost's own kubeconfig reading, against a real TLS server: the shapes that must keep working.

The kubernetes package's loader is no longer used (it waits on exec plugins without limit and logs their
stderr); these cases pin what replaced it: inline CA data and tokens (the sandbox's kubeconfigs), $KUBECONFIG
merging (first definition wins), and the ExecCredential contract (args, env, KUBERNETES_EXEC_INFO with
provideClusterInfo, a relative command resolved against the kubeconfig's directory).
"""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from hostile import HostileServer, healthy

from outpost.config import parse_settings
from outpost.result import Status
from outpost.runner import run_check
from outpost_sandbox.pki import LocalhostTls, localhost_tls


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> LocalhostTls:
    return localhost_tls(tmp_path_factory.mktemp("pki"))


def run(path: str | None) -> Any:
    auth: dict[str, Any] = {"mode": "kubeconfig"}
    if path:
        auth["path"] = path
    settings = parse_settings({"environment": "kc", "cluster": {"name": "kc", "auth": auth, "deadline_seconds": 5},
                               "checks": {"apiserver-health": {}}})
    return run_check(settings, "apiserver-health", report=False, log=False)


def test_inline_ca_data_and_token_like_the_sandbox_writes_them(tmp_path: Path, pki: LocalhostTls) -> None:
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "probe",
            "clusters": [{"name": "s", "cluster": {"server": server.url, "certificate-authority-data":
                                                   base64.b64encode(pki.ca_file.read_bytes()).decode()}}],
            "users": [{"name": "outpost-probe", "user": {"token": "sandbox-probe-token"}}],
            "contexts": [{"name": "probe", "context": {"cluster": "s", "user": "outpost-probe"}}]}))
        result = run(str(path))
    assert result.status is Status.OK, result.summary
    assert [r.authorization for r in server.requests] == ["Bearer sandbox-probe-token"] * 2


def test_kubeconfig_variable_merges_files_first_definition_wins(tmp_path: Path, pki: LocalhostTls,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        first, second = tmp_path / "a", tmp_path / "b"
        first.write_text(yaml.safe_dump({
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": "first-file-token"}}]}))
        second.write_text(yaml.safe_dump({
            "current-context": "ignored",
            "clusters": [{"name": "c", "cluster": {"server": server.url, "certificate-authority": str(pki.ca_file)}}],
            "users": [{"name": "u", "user": {"token": "second-file-token"}}]}))
        monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
        result = run(None)
    assert result.status is Status.OK, result.summary
    assert {r.authorization for r in server.requests} == {"Bearer first-file-token"}


def test_exec_plugin_gets_args_env_and_cluster_info(tmp_path: Path, pki: LocalhostTls) -> None:
    (tmp_path / "bin").mkdir()
    plugin = tmp_path / "bin" / "plugin.sh"
    seen = tmp_path / "seen.json"
    plugin.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$1 $PLUGIN_MODE\" > {seen}.args\n"
        f"printf '%s' \"$KUBERNETES_EXEC_INFO\" > {seen}\n"
        "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
        "\"status\":{\"token\":\"exec-token-from-plugin\"}}'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": server.url, "certificate-authority": str(pki.ca_file)}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "./bin/plugin.sh",
                "args": ["--cluster=prod"], "env": [{"name": "PLUGIN_MODE", "value": "batch"}],
                "provideClusterInfo": True}}}]}))
        result = run(str(path))
        url = server.url
    assert result.status is Status.OK, result.summary
    assert {r.authorization for r in server.requests} == {"Bearer exec-token-from-plugin"}
    assert Path(f"{seen}.args").read_text().strip() == "--cluster=prod batch"
    info = json.loads(seen.read_text())
    assert info["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == url
    assert base64.b64decode(info["spec"]["cluster"]["certificate-authority-data"]) == pki.ca_file.read_bytes()


def test_the_clusters_ca_is_the_only_trust_anchor_not_added_to_the_system_roots(
        tmp_path: Path, pki: LocalhostTls, monkeypatch: pytest.MonkeyPatch) -> None:
    """As with kubectl, a kubeconfig's certificate-authority replaces the system roots: a server whose certificate
    a system-trusted CA signed (SSL_CERT_FILE stands in for the system store) is refused, with the cause named."""
    other = localhost_tls(tmp_path, "system-trusted")
    monkeypatch.setenv("SSL_CERT_FILE", str(other.ca_file))
    with HostileServer(healthy(), other.cert_file, other.key_file) as server:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "probe",
            "clusters": [{"name": "s", "cluster": {"server": server.url, "certificate-authority": str(pki.ca_file)}}],
            "users": [{"name": "outpost-probe", "user": {"token": "sandbox-probe-token"}}],
            "contexts": [{"name": "probe", "context": {"cluster": "s", "user": "outpost-probe"}}]}))
        result = run(str(path))
    assert result.status is Status.ERROR
    assert "certificate verify failed" in result.summary, result.summary
    assert not [r for r in server.requests if r.authorization]
