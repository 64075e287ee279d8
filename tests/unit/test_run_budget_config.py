"""`cluster.max_run_bytes`: one byte budget per run, with a default and bounds, handed to the run's `Cluster`."""

from __future__ import annotations

import pytest

from outpost.cluster import Cluster
from outpost.config import ClusterSettings, parse_settings
from outpost.errors import ConfigError

AUTH = {
    "mode": "token",
    "server": "https://127.0.0.1:6443",
    "token": "env:T",
    "ca_data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
}


def settings(**cluster: object) -> ClusterSettings:
    return parse_settings({"environment": "t", "cluster": {"name": "c", "auth": AUTH, **cluster}}).cluster


def test_the_default_is_eight_responses_worth() -> None:
    got = settings()
    assert got.max_run_bytes == 256 * 1024 * 1024 == 8 * got.max_response_bytes


@pytest.mark.parametrize("value", [1024 * 1024 - 1, 4 * 1024 * 1024 * 1024 + 1, 0])
def test_out_of_bounds_is_refused_naming_the_field(value: int) -> None:
    with pytest.raises(ConfigError, match=r"cluster.max_run_bytes"):
        settings(max_run_bytes=value)


def test_the_run_cluster_holds_the_budget() -> None:
    cluster = Cluster(
        "c", "https://127.0.0.1:6443", verify=__import__("ssl").create_default_context(), max_run_bytes=5 * 1024 * 1024
    )
    with cluster:
        assert (cluster.budget.total, cluster.budget.setting) == (5 * 1024 * 1024, "cluster.max_run_bytes")
