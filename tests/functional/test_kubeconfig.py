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

from kit.certs import distinct_cas
from kit.kubeconfigs import exec_user
from outpost.config import parse_settings
from outpost.result import Status
from outpost.runner import run_check
from outpost_sandbox.pki import LocalhostTls, localhost_tls


def run(path: str | None) -> Any:
    auth: dict[str, Any] = {"mode": "kubeconfig"}
    if path:
        auth["path"] = path
    settings = parse_settings(
        {
            "environment": "kc",
            "cluster": {"name": "kc", "auth": auth, "deadline_seconds": 5},
            "checks": {"apiserver-health": {}},
        }
    )
    return run_check(settings, "apiserver-health", report=False, log=False)


def probe_kubeconfig(path: Path, cluster: dict[str, str]) -> Path:
    """A kubeconfig named as the sandbox names its probe's: cluster `s`, user and context `outpost-probe`/`probe`."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "probe",
                "clusters": [{"name": "s", "cluster": cluster}],
                "users": [{"name": "outpost-probe", "user": {"token": "sandbox-probe-token"}}],
                "contexts": [{"name": "probe", "context": {"cluster": "s", "user": "outpost-probe"}}],
            }
        )
    )
    return path


def test_inline_ca_data_and_token_like_the_sandbox_writes_them(tmp_path: Path, pki: LocalhostTls) -> None:
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        cluster = {
            "server": server.url,
            "certificate-authority-data": base64.b64encode(pki.ca_file.read_bytes()).decode(),
        }
        path = probe_kubeconfig(tmp_path / "kubeconfig", cluster)
        result = run(str(path))
    assert result.status is Status.OK, result.summary
    assert [r.authorization for r in server.requests] == ["Bearer sandbox-probe-token"] * 2


def test_kubeconfig_variable_merges_files_first_definition_wins(
    tmp_path: Path, pki: LocalhostTls, monkeypatch: pytest.MonkeyPatch
) -> None:
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        first, second = tmp_path / "a", tmp_path / "b"
        first.write_text(
            yaml.safe_dump(
                {
                    "current-context": "c",
                    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                    "users": [{"name": "u", "user": {"token": "first-file-token"}}],
                }
            )
        )
        second.write_text(
            yaml.safe_dump(
                {
                    "current-context": "ignored",
                    "clusters": [
                        {"name": "c", "cluster": {"server": server.url, "certificate-authority": str(pki.ca_file)}}
                    ],
                    "users": [{"name": "u", "user": {"token": "second-file-token"}}],
                }
            )
        )
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
        'echo \'{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
        '"status":{"token":"exec-token-from-plugin"}}\'\n'
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        path = tmp_path / "kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "current-context": "c",
                    "clusters": [
                        {"name": "c", "cluster": {"server": server.url, "certificate-authority": str(pki.ca_file)}}
                    ],
                    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                    "users": [
                        {
                            "name": "u",
                            "user": {
                                "exec": {
                                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                                    "command": "./bin/plugin.sh",
                                    "args": ["--cluster=prod"],
                                    "env": [{"name": "PLUGIN_MODE", "value": "batch"}],
                                    "provideClusterInfo": True,
                                }
                            },
                        }
                    ],
                }
            )
        )
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
    tmp_path: Path, pki: LocalhostTls, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As with kubectl, a kubeconfig's certificate-authority replaces the system roots: a server whose certificate
    a system-trusted CA signed (SSL_CERT_FILE stands in for the system store) is refused, with the cause named."""
    other = localhost_tls(tmp_path, "system-trusted")
    monkeypatch.setenv("SSL_CERT_FILE", str(other.ca_file))
    with HostileServer(healthy(), other.cert_file, other.key_file) as server:
        path = probe_kubeconfig(
            tmp_path / "kubeconfig", {"server": server.url, "certificate-authority": str(pki.ca_file)}
        )
        result = run(str(path))
    assert result.status is Status.ERROR
    assert "certificate verify failed" in result.summary, result.summary
    assert not [r for r in server.requests if r.authorization]


# -- local inputs: read through outpost.local_files, kubectl's shapes kept ---------------------------------------------


def kubeconfig(
    tmp_path: Path, server: str, pki: LocalhostTls, user: dict[str, Any], name: str = "kubeconfig", **cluster: Any
) -> Path:
    path = tmp_path / name
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {"name": "c", "cluster": {"server": server, "certificate-authority": str(pki.ca_file), **cluster}}
                ],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": user}],
            }
        )
    )
    return path


def test_a_projected_token_behind_symlinks_is_read_at_each_use(tmp_path: Path, pki: LocalhostTls) -> None:
    """kubelet's projected service-account token: token -> ..data/token, ..data -> a timestamped directory,
    swapped atomically on rotation. Symlinks are followed; the new token is used by the next run."""
    volume = tmp_path / "serviceaccount"
    volume.mkdir()
    for stamp, token in (
        ("..2026_01_01_00_00_00.1", "projected-token-one"),
        ("..2026_01_01_01_00_00.2", "projected-token-two"),
    ):
        (volume / stamp).mkdir()
        (volume / stamp / "token").write_text(token + "\n")
    (volume / "..data").symlink_to("..2026_01_01_00_00_00.1")
    (volume / "token").symlink_to("..data/token")
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        path = kubeconfig(tmp_path, server.url, pki, {"tokenFile": str(volume / "token")})
        link = tmp_path / "kubeconfig-link"
        link.symlink_to(path)
        assert run(str(link)).status is Status.OK
        (volume / "..data").unlink()
        (volume / "..data").symlink_to("..2026_01_01_01_00_00.2")
        assert run(str(link)).status is Status.OK
    assert [r.authorization for r in server.requests] == (
        ["Bearer projected-token-one"] * 2 + ["Bearer projected-token-two"] * 2
    )


def test_client_certificate_and_key_files_are_loaded(tmp_path: Path, pki: LocalhostTls) -> None:
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        path = kubeconfig(
            tmp_path, server.url, pki, {"client-certificate": str(pki.cert_file), "client-key": str(pki.key_file)}
        )
        result = run(str(path))
    assert result.status is Status.OK, result.summary


def test_a_client_key_over_its_limit_is_refused_naming_it(tmp_path: Path, pki: LocalhostTls) -> None:
    key = tmp_path / "client.key"
    with key.open("wb") as handle:
        handle.truncate(10 * 1024 * 1024)
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        result = run(
            str(
                kubeconfig(
                    tmp_path, server.url, pki, {"client-certificate": str(pki.cert_file), "client-key": str(key)}
                )
            )
        )
    assert result.status is Status.ERROR
    assert f"client key {key}: is 10 MiB, over the 64 KiB limit for a client key" in result.summary
    assert server.requests == []


def test_a_repeated_key_keeps_the_last_value_as_kubectl_does(tmp_path: Path, pki: LocalhostTls) -> None:
    """client-go decodes a kubeconfig non-strictly (sigs.k8s.io/yaml YAMLToJSON over yaml.v2): a repeated key
    silently keeps the last value. Outpost does the same for kubeconfigs (its own configuration refuses it)."""
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        path = tmp_path / "kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: '{server.url}', certificate-authority: '{pki.ca_file}'}}}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
            "users:\n- name: u\n  user:\n    token: first-token-value\n    token: last-token-value\n"
        )
        result = run(str(path))
    assert result.status is Status.OK, result.summary
    assert {r.authorization for r in server.requests} == {"Bearer last-token-value"}


@pytest.mark.parametrize(
    ("user", "cause"),
    [
        ({"token": ["not", "a", "string"]}, "user u of context c: token must be a string"),
        (
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "/bin/true",
                    "interactiveMode": "Never",
                    "args": [["nested"]],
                }
            },
            "exec plugin of user u of context c: args must be a list of strings",
        ),
    ],
)
def test_values_client_go_types_as_strings_must_be_strings(
    tmp_path: Path, pki: LocalhostTls, user: dict[str, Any], cause: str
) -> None:
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        result = run(str(kubeconfig(tmp_path, server.url, pki, user)))
    assert result.status is Status.ERROR
    assert cause in result.summary, result.summary
    assert server.requests == []


def test_a_password_in_the_server_url_is_never_sent_nor_printed(tmp_path: Path, pki: LocalhostTls) -> None:
    password = "kc-url-pw-Hn5Tq2Wx"
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        url = server.url
        address = url.removeprefix("https://")
        result = run(str(kubeconfig(tmp_path, f"https://admin:{password}@{address}", pki, {"token": "t-123456"})))
    assert result.status is Status.ERROR
    assert (
        f"the server of cluster c carries user information (user:password@); Outpost never sends a password: "
        f"give {url} and a token"
    ) in result.summary
    assert password not in result.model_dump_json()
    assert server.requests == []


def _ca_bundle(path: Path, cluster_ca: bytes, others: int) -> Path:
    pems = [cluster_ca, *distinct_cas(others, "other-ca")]
    path.write_bytes(b"".join(pems))
    return path


def test_a_ca_bundle_of_the_maximum_count_works_and_one_more_is_refused(tmp_path: Path, pki: LocalhostTls) -> None:
    from outpost.cluster.auth.credentials import MAX_CA_CERTIFICATES

    bundle = _ca_bundle(tmp_path / "bundle.pem", pki.ca_file.read_bytes(), MAX_CA_CERTIFICATES - 1)
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        accepted = run(
            str(kubeconfig(tmp_path, server.url, pki, {"token": "t-123456"}, **{"certificate-authority": str(bundle)}))
        )
        bundle.write_bytes(bundle.read_bytes() + pki.ca_file.read_bytes())
        refused = run(
            str(kubeconfig(tmp_path, server.url, pki, {"token": "t-123456"}, **{"certificate-authority": str(bundle)}))
        )
    assert accepted.status is Status.OK, accepted.summary
    assert refused.status is Status.ERROR
    assert (
        f"CA bundle {bundle} of cluster c holds {MAX_CA_CERTIFICATES + 1} certificates, over the limit of "
        f"{MAX_CA_CERTIFICATES}"
    ) in refused.summary


def test_a_plugin_writing_megabytes_to_stderr_still_gives_its_credential(tmp_path: Path, pki: LocalhostTls) -> None:
    """stderr is drained as it comes (and discarded): a chatty plugin can neither block on a full pipe nor make
    Outpost buffer its output."""
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(
        "#!/bin/sh\nhead -c 8000000 /dev/zero >&2\n"
        'echo \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        '"status":{"token":"chatty-plugin-token"}}\'\n'
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        result = run(
            str(
                kubeconfig(
                    tmp_path,
                    server.url,
                    pki,
                    exec_user(plugin),
                )
            )
        )
    assert result.status is Status.OK, result.summary
    assert {r.authorization for r in server.requests} == {"Bearer chatty-plugin-token"}


def test_a_stop_kills_the_running_plugin_it_tracks(tmp_path: Path, pki: LocalhostTls) -> None:
    """The plugin is registered with `outpost.interrupt` while it runs: a SIGINT/SIGTERM handler's `kill_tracked()`
    ends it (and its group) at once, not at the deadline."""
    import threading
    import time

    from outpost import interrupt

    plugin = tmp_path / "plugin.sh"
    plugin.write_text("#!/bin/sh\nsleep 30 &\nwait\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    timer = threading.Timer(0.5, interrupt.kill_tracked)
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        path = kubeconfig(
            tmp_path,
            server.url,
            pki,
            exec_user(plugin),
        )
        started = time.monotonic()
        timer.start()
        result = run(str(path))
        elapsed = time.monotonic() - started
    timer.join()
    assert result.status is Status.ERROR
    assert "exited with status -9" in result.summary, result.summary
    assert elapsed < 3.0, f"took {elapsed:.1f} s: the stop did not end the plugin"
    assert server.requests == []
