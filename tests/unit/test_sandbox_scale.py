"""The sandbox's scale profiles: the test-scale sandbox runs with upstream's defaults, larger ones keep kwok's
Lease renewals within what 2 cores sustain, and every component of a grown sandbox gets its tier's flags.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.components import COMPONENT_SPECS, controller_manager_argv, kwok_argv, scheduler_argv
from outpost_sandbox.scale import KWOK_LEASE_DURATIONS, MAX_NODES, NODE_LEASE_SECONDS, SCALE_PROFILES, scale_profile
from outpost_sandbox.state import Ports, State

FAULT_LEASE_SECONDS = 86400  # what node-lease-stale writes (faults/nodes.py): never one of kwok's


@pytest.mark.parametrize("nodes", [1, 20, 100, 500])
def test_test_scale_runs_with_upstream_defaults(nodes: int) -> None:
    profile = scale_profile(nodes)
    assert profile.node_lease_seconds == NODE_LEASE_SECONDS == 40
    assert profile.controller_manager_flags() == []
    assert profile.scheduler_flags() == []
    assert profile.kwok_configuration() is None
    assert profile.install_timeout_seconds == 240.0


@pytest.mark.parametrize("nodes", [501, 1000, 2000, 2001, 5000])
def test_renewals_stay_within_budget_and_grace_covers_the_lease(nodes: int) -> None:
    profile = scale_profile(nodes)
    renewals_per_second = nodes / (profile.node_lease_seconds / 4)
    assert renewals_per_second <= 50
    assert profile.node_monitor_grace_seconds == profile.node_lease_seconds * 5 // 4
    assert profile.node_startup_grace_seconds is not None
    assert profile.node_startup_grace_seconds >= profile.node_monitor_grace_seconds
    assert f"--node-monitor-grace-period={profile.node_monitor_grace_seconds}s" in profile.controller_manager_flags()


def test_tiers_grow_and_cover_every_allowed_count() -> None:
    assert [p.max_nodes for p in SCALE_PROFILES] == sorted(p.max_nodes for p in SCALE_PROFILES)
    assert SCALE_PROFILES[-1].max_nodes == MAX_NODES
    leases = [p.node_lease_seconds for p in SCALE_PROFILES]
    assert leases == sorted(set(leases))
    assert FAULT_LEASE_SECONDS not in KWOK_LEASE_DURATIONS


def test_kwok_configuration_spells_out_every_default_it_does_not_tune() -> None:
    text = scale_profile(5000).kwok_configuration()
    assert text is not None
    doc = yaml.safe_load(text)
    assert doc["kind"] == "KwokConfiguration"
    options = doc["options"]
    assert options["nodeLeaseParallelism"] == options["podPlayStageParallelism"] == 16
    # kwok v0.8.0 defaults: a loaded configuration is not defaulted, so zero would mean no workers.
    assert options["podsOnNodeSyncParallelism"] == 1
    assert options["enablePodsOnNodeSyncListPager"] is True
    assert options["enablePodsOnNodeSyncStreamWatch"] is False


@pytest.mark.parametrize(("nodes", "lease", "kwok_configs"), [(100, 40, 1), (1000, 160, 2), (5000, 400, 2)])
def test_component_argv_follows_the_node_count(tmp_path: Path, nodes: int, lease: int, kwok_configs: int) -> None:
    sandbox = Sandbox(tmp_path)
    state = State(ports=Ports(1, 2, 3, 4, 5), bin_dir=str(tmp_path / "bin"), nodes=nodes)
    kwok, _env = kwok_argv(sandbox, state)
    assert f"--node-lease-duration-seconds={lease}" in kwok
    assert sum(arg.startswith("--config=") for arg in kwok) == kwok_configs
    manager, _ = controller_manager_argv(sandbox, state)
    scheduler, _ = scheduler_argv(sandbox, state)
    profile = scale_profile(nodes)
    assert manager[-len(profile.controller_manager_flags()) or len(manager) :] == profile.controller_manager_flags()
    assert scheduler[-len(profile.scheduler_flags()) or len(scheduler) :] == profile.scheduler_flags()


@pytest.mark.parametrize("nodes", [1, 100, 500, 1000, 5000])
def test_kwok_start_waits_out_one_lease_retry(nodes: int) -> None:
    """kwok retries a node Lease it failed to take over one renew interval later (lease / 4, +4 % jitter): a
    restarted kwok gets at least that long, and a minute more, to have renewed every Lease (seen: 7 of 1,000
    Leases retried 100 s later when a sandbox grew into the 400 s tier, past the fixed 90 s it had)."""
    profile = scale_profile(nodes)
    spec = COMPONENT_SPECS["kwok"]
    assert spec.scaled_timeout is not None
    timeout = max(spec.ready_timeout, spec.scaled_timeout(profile))
    assert timeout >= profile.node_lease_seconds / 4 * 1.04 + 60
    assert timeout >= 90  # the test scale keeps what it always had
