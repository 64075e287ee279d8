"""The command line's contract: output shapes and exit statuses (0/1/2/64)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from outpost.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_names_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0
    checks = {c["name"]: c for c in json.loads(out)}
    assert checks["apiserver-health"]["severity"] == "critical"
    assert set(checks["apiserver-health"]) >= {"name", "system", "layer", "severity", "schedule"}


def test_list_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert out.splitlines()[0].split() == ["NAME", "SYSTEM", "LAYER", "SEVERITY", "SCHEDULE"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["run"], "give check names or --all"), (["run", "no-such-check"], "unknown check(s): no-such-check"),
     (["run", "apiserver-health", "--all"], "not both")],
)
def test_usage_errors_exit_64(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 64
    assert message in err


def test_argparse_errors_exit_64(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", "--bogus-flag"])
    assert caught.value.code == 64


def test_validate_names_bad_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"environment": "Prod!", "cluster": {"name": "c"}}))
    code, out, err = run(capsys, "validate", "--config", str(path))
    assert code == 64
    assert "environment: " in err
    assert "cluster.auth: Field required" in err
    assert out == ""


def test_validate_shipped_local_environment(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "--env", "local")
    assert code == 0
    assert "apiserver-health" in out


def test_unreachable_cluster_is_exit_2_with_json(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("CLI_TEST_TOKEN", "tok")
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump({
        "environment": "t",
        "cluster": {"name": "gone", "auth": {"mode": "token", "server": f"https://127.0.0.1:{port}",
                                             "token": "env:CLI_TEST_TOKEN"}},
        "checks": {"apiserver-health": {}},
    }))
    code, out, _ = run(capsys, "run", "--all", "--config", str(path), "--json")
    assert code == 2
    (result,) = json.loads(out)
    assert result["status"] == "error"
    assert result["summary"] == "GET /livez on cluster gone: connection refused"
    assert result["reported"] is False
