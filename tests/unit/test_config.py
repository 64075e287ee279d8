"""Configuration: every bad field is named by its path, all at once.

Defaults come from docs/contracts.md "Configuration".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from outpost.config import environment_file, parse_settings
from outpost.errors import ConfigError
from outpost.settings import load_settings, settings_from_environment

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return path


def minimal(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "environment": "prod",
        "cluster": {
            "name": "prod-eu",
            "auth": {
                "mode": "token",
                "server": "https://api.example.test:6443",
                "token": "ssm:/outpost/prod/token",
                "ca_file": "/etc/ca.crt",
            },
        },
        "checks": {"apiserver-health": {"heartbeat": "secretsmanager:outpost/prod/hb#apiserver"}},
    }
    document.update(overrides)
    return document


def problems_of(tmp_path: Path, document: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, document))
    return caught.value.problems


@pytest.mark.parametrize("environment", sorted(p.stem for p in (REPO / "infra" / "environments").glob("*.yaml")))
def test_shipped_environments_are_valid(environment: str) -> None:
    settings = load_settings(environment_file(environment, REPO))
    assert settings.environment == environment


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, minimal()))
    assert settings.cluster.connect_timeout_seconds == 5.0
    assert settings.cluster.deadline_seconds == 45.0
    assert settings.heartbeat.retries == 3
    assert settings.vigilmon.api_url == "https://vigilmon.online/api"
    check = settings.checks["apiserver-health"]
    assert check.enabled
    assert check.tolerated_misses == 2
    assert check.grace_seconds(schedule_minutes=1) == 180
    assert settings.enabled_checks() == ["apiserver-health"]


def test_every_problem_is_named_by_path(tmp_path: Path) -> None:
    document = minimal()
    document["cluster"]["auth"]["server"] = "http://plain.example.test"
    document["cluster"]["read_timeout_seconds"] = -1
    document["heartbeat"] = {"retries": "many"}
    document["checks"] = {
        "apiserver-health": {"heartbeat": "https://hb.example.test/secret-token", "params": {"exclud": ["etcd"]}},
        "no-such-check": {},
    }
    document["colour"] = "blue"
    problems = problems_of(tmp_path, document)
    joined = "\n".join(problems)
    for path in (
        "cluster.auth.token.server: ",
        "cluster.read_timeout_seconds: ",
        "heartbeat.retries: ",
        "checks.apiserver-health.heartbeat: ",
        "checks.apiserver-health.params.exclud: ",
        "checks.no-such-check: unknown check",
        "colour: ",
    ):
        assert any(p.startswith(path) for p in problems), f"{path!r} not in:\n{joined}"
    # A heartbeat URL written in place of a reference is a secret: it must not be echoed back.
    assert "secret-token" not in joined


def test_unknown_auth_mode(tmp_path: Path) -> None:
    document = minimal()
    document["cluster"]["auth"] = {"mode": "password"}
    assert any(p.startswith("cluster.auth: ") for p in problems_of(tmp_path, document))


def test_not_a_mapping(tmp_path: Path) -> None:
    assert problems_of(tmp_path, "- just\n- a list\n") == ["(top level): expected a mapping, got list"]


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, "environment: prod\ncluster: [unclosed\n"))
    assert "line" in caught.value.problems[0]


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_settings("/nonexistent/outpost.yaml")


def test_cold_start_needs_a_source() -> None:
    with pytest.raises(ConfigError, match="OUTPOST_CONFIG"):
        settings_from_environment({})


def test_cold_start_reads_outpost_config(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    assert settings_from_environment({"OUTPOST_CONFIG": str(path)}).environment == "prod"


def test_the_function_timeout_is_derived_from_the_file_not_fixed(tmp_path: Path) -> None:
    from outpost.deploy import function_timeout_seconds, run_worst_case_seconds

    settings = load_settings(
        write(
            tmp_path,
            minimal(
                cluster={
                    "name": "c",
                    "deadline_seconds": 100,
                    "auth": {"mode": "token", "server": "https://k", "token": "ssm:/outpost/prod/token"},
                },
                heartbeat={"timeout_seconds": 10, "retries": 3, "backoff_seconds": 1},
            ),
        )
    )
    assert run_worst_case_seconds(settings) == 148  # 100 + 10 x 4 + (1 + 2 + 4) + 1
    assert function_timeout_seconds(settings) == 153  # + the 5 s margin
    serverless = yaml.safe_load(
        "\n".join(line for line in (REPO / "serverless.yml").read_text().splitlines() if "${" not in line)
    )
    assert "timeout" not in serverless["provider"]  # each function's timeout comes from its build


# -- local inputs: the configuration file is read through outpost.local_files, its aliases bounded -------------


def test_anchors_and_aliases_that_expand_to_little_are_accepted(tmp_path: Path) -> None:
    text = (
        "environment: prod\ncluster:\n  name: &name prod-eu\n  auth: {mode: token, server: 'https://k', "
        "token: 'ssm:/outpost/prod/token'}\nchecks:\n  apiserver-health:\n    monitor_id: *name\n"
    )
    settings = load_settings(write(tmp_path, text))
    assert settings.checks["apiserver-health"].monitor_id == "prod-eu"


def test_an_alias_bomb_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    bomb = "lol0: &a0 [lol]\n" + "".join(f"lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 12))
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, bomb))
    assert caught.value.headline == f"configuration {tmp_path / 'env.yaml'} is invalid"
    assert caught.value.problems == [
        f"{tmp_path / 'env.yaml'} line 8 column 7: YAML aliases expand this value past "
        "16777216 nodes and characters (an alias bomb?)"
    ]


def test_an_alias_inside_the_node_it_names_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"a YAML alias refers to a node that contains it"):
        load_settings(write(tmp_path, "a: &loop [1, *loop]\n"))


def test_aliases_cannot_nest_past_the_depth_limit(tmp_path: Path) -> None:
    from outpost.config import MAX_YAML_DEPTH

    chain = "d0: &d0 [x]\n" + "".join(f"d{i}: &d{i} [[[[[[[[[[*d{i - 1}]]]]]]]]]]\n" for i in range(1, 8))
    with pytest.raises(ConfigError, match=rf"nested deeper than {MAX_YAML_DEPTH} levels once its aliases"):
        load_settings(write(tmp_path, chain))


def test_nesting_deeper_than_the_limit_is_refused(tmp_path: Path) -> None:
    from outpost.config import MAX_YAML_DEPTH

    with pytest.raises(ConfigError, match=rf"nested deeper than {MAX_YAML_DEPTH} levels"):
        load_settings(write(tmp_path, "a: " + "[" * 100 + "]" * 100))


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
        (lambda p: p.mkdir(), "a directory"),
    ],
)
def test_a_configuration_that_is_not_a_regular_file_is_refused(tmp_path: Path, make: Any, what: str) -> None:
    path = tmp_path / "env.yaml"
    make(path)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(caught.value) == f"cannot read configuration {path}: is {what}, not a regular file"


def test_a_character_device_as_configuration_is_refused() -> None:
    with pytest.raises(ConfigError, match="cannot read configuration /dev/zero: is a character device, not a regular"):
        settings_from_environment({"OUTPOST_CONFIG": "/dev/zero"})


def test_a_configuration_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    with path.open("wb") as handle:
        handle.truncate(1024 * 1024 + 1)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(caught.value) == (
        f"cannot read configuration {path}: is 1 MiB, over the 1 MiB limit for a configuration"
    )


def test_a_symlinked_configuration_is_read(tmp_path: Path) -> None:
    target = write(tmp_path, minimal())
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    assert load_settings(link).environment == "prod"


@pytest.mark.parametrize(
    "auth",
    [
        {"mode": "token", "server": "https://probe:{pw}@api.example.test:6443/base", "token": "ssm:/outpost/prod/t"},
        {
            "mode": "eks",
            "cluster_name": "c",
            "region": "eu-west-1",
            "server": "https://probe:{pw}@api.example.test:6443/base",
            "ca_data": "Cg==",
        },
        {"mode": "gke", "server": "https://probe:{pw}@api.example.test:6443/base", "ca_data": "Cg=="},
    ],
)
def test_a_server_with_user_information_is_refused_without_printing_the_password(
    tmp_path: Path, auth: dict[str, str]
) -> None:
    password = "pw-Rk3Lz8Qm1Xv"
    configured = {key: value.format(pw=password) for key, value in auth.items()}
    document = minimal()
    document["cluster"]["auth"] = configured
    document["checks"]["apiserver-health"]["cluster_auth"] = dict(configured)  # no shared object: no YAML anchor
    problems = problems_of(tmp_path, document)
    mode = auth["mode"]
    for path in (f"cluster.auth.{mode}.server", f"checks.apiserver-health.cluster_auth.{mode}.server"):
        assert (
            f"{path}: must not carry user information (user:password@): https://api.example.test:6443/base "
            "is what may be given; Outpost never sends a password (give a token)" in problems
        )
    assert password not in "\n".join(problems)


def test_a_user_name_alone_is_refused_too(tmp_path: Path) -> None:
    document = minimal()
    document["cluster"]["auth"]["server"] = "https://probe@api.example.test"
    assert any(
        p.startswith("cluster.auth.token.server: must not carry user information")
        for p in problems_of(tmp_path, document)
    )


def test_an_at_sign_in_the_path_is_not_user_information(tmp_path: Path) -> None:
    document = minimal()
    document["cluster"]["auth"]["server"] = "https://api.example.test:6443/clusters/a@b"
    assert load_settings(write(tmp_path, document)).cluster.auth.server.endswith("/a@b")  # type: ignore[union-attr]


# -- outpost.local_files itself -------------------------------------------------------------------------------------


def test_local_files_follow_symlinks_like_a_projected_token(tmp_path: Path) -> None:
    from outpost import local_files

    # kubelet's projected volume layout: token -> ..data/token, ..data -> ..2026_01_01_00_00_00.1
    (tmp_path / "..2026_01_01_00_00_00.1").mkdir()
    (tmp_path / "..2026_01_01_00_00_00.1" / "token").write_text("projected-token\n")
    (tmp_path / "..data").symlink_to("..2026_01_01_00_00_00.1")
    (tmp_path / "token").symlink_to("..data/token")
    assert local_files.read_text(tmp_path / "token", local_files.TOKEN) == "projected-token\n"


def test_local_files_cap_a_file_that_reports_no_size(tmp_path: Path) -> None:
    from outpost import local_files

    # procfs files say size 0 and still have content: the read itself is capped (as for a file growing meanwhile).
    tiny = local_files.FileKind("status file", 64)
    with pytest.raises(local_files.LocalFileError) as caught:
        local_files.read_bytes("/proc/self/status", tiny)
    assert str(caught.value) == (
        "status file /proc/self/status: grew past the 64 bytes limit for a status file while it was read"
    )


def test_local_files_stop_at_the_deadline(tmp_path: Path) -> None:
    from outpost import local_files
    from outpost.bounded import Deadline

    path = tmp_path / "token"
    path.write_text("t" * 100)
    with pytest.raises(local_files.LocalFileError, match=r"token file \S+: not read within the deadline of 0 s"):
        local_files.read_text(path, local_files.TOKEN, Deadline(0))


def test_local_files_refuse_text_that_is_not_utf8_without_quoting_it(tmp_path: Path) -> None:
    from outpost import local_files

    path = tmp_path / "kubeconfig"
    path.write_bytes(b"token: secret-\xff-value\n")
    with pytest.raises(local_files.LocalFileError) as caught:
        local_files.read_text(path, local_files.KUBECONFIG)
    assert str(caught.value) == f"kubeconfig {path}: is not UTF-8 text (byte 14)"


def test_local_files_name_a_missing_file() -> None:
    from outpost import local_files

    with pytest.raises(local_files.LocalFileError) as caught:
        local_files.read_bytes("/nonexistent/ca.crt", local_files.CA_BUNDLE)
    assert str(caught.value) == "CA bundle /nonexistent/ca.crt: cannot be read: No such file or directory"


def test_every_kind_has_a_documented_limit() -> None:
    from outpost import local_files

    limits = {kind.name: kind.limit_text for kind in local_files.KINDS}
    assert limits == {
        "configuration": "1 MiB",
        "kubeconfig": "4 MiB",
        "token file": "64 KiB",
        "CA bundle": "4 MiB",
        "client certificate": "256 KiB",
        "client key": "64 KiB",
    }


# -- scalars as written: no bool for a number, no string for a number or a bool (outpost.strict) ------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("deadline_seconds", True),
        ("deadline_seconds", "30"),
        ("read_timeout_seconds", False),
        ("max_response_bytes", "1048576"),
    ],
)
def test_a_scalar_of_the_wrong_kind_is_refused_naming_its_path(field: str, value: object) -> None:
    raw = {"environment": "x", "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/k"}, field: value}}
    with pytest.raises(ConfigError) as caught:
        parse_settings(raw)
    assert any(p.startswith(f"cluster.{field}: Input should be a valid") for p in caught.value.problems), (
        caught.value.problems
    )


def test_check_params_take_scalars_as_written() -> None:
    from outpost.checks.leader_leases import LeaderLeasesParams

    with pytest.raises(ValidationError, match=r"max_future_skew_seconds\n  Input should be a valid number"):
        LeaderLeasesParams.model_validate({"max_future_skew_seconds": True})
    assert LeaderLeasesParams.model_validate({"max_future_skew_seconds": 5}).max_future_skew_seconds == 5
