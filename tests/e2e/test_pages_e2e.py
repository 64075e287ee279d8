"""Pages per fault on the sandbox: an API server outage is one page, the dependants held back.

Every enabled check of the shipped `local` environment runs at once on one scaled clock (`pages.measure`), each
monitor in the Vigilmon stand-in as `outpost monitors` defines it, hold-back through the inhibitor in process;
`apiserver-down` is broken, settles, is healed. `outpost sandbox pages` runs the same for the whole catalogue and
writes docs/pages.md. It is also the control-plane fault's time to alert: the page comes within apiserver-health's
model worst case, every alert resolves after the heal (test_time_to_alert_e2e.py holds the node-agent faults).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from outpost_sandbox import faults, pages

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox

FAULT = "apiserver-down"
SETTLE_CAP_SECONDS = 400.0


def test_an_api_server_outage_is_one_page_with_its_dependants_held_back(sandbox: SandboxInfo, tmp_path: Path) -> None:
    record = pages.measure(
        pages.catalogue_driver(sandbox.state_dir, FAULT, None),
        pages.base_environment(sandbox.state_dir, tmp_path),
        tmp_path / "run",
        period_seconds=4.0,
        # Past every 1-minute monitor's worst case (275 s), short of a 5-minute one's: the page and the holds are
        # all in by then, and the settle takes half as long (the whole-catalogue run keeps the default cap).
        horizon_cap_seconds=SETTLE_CAP_SECONDS,
    )
    tally = pages.tally(record)
    shown = pages.render([record], [], command=f"outpost sandbox pages --fault {FAULT}", generated_at="e2e")
    assert record.unhealthy_before == (), shown
    assert [alert.check for alert in tally.pages] == ["apiserver-health"], shown
    assert tally.notifications == (), shown
    critical_dependants = {m.check for m in record.monitors if m.pages} - {"apiserver-health"}
    assert critical_dependants <= set(tally.held_back), shown
    assert tally.first_page_within_model, shown
    assert tally.unresolved == (), shown
    # The cloud alarms over the same runs, held back as generated: nothing pages; apiserver-health's error notifies,
    # and a dependant's only on `flapping`, which is never held.
    for cloud in ("aws", "gcp"):
        notified = tally.cloud[cloud]["notify"]
        assert tally.cloud[cloud]["page"] == (), (cloud, shown)
        assert "apiserver-health error" in notified, (cloud, shown)
        assert all(item == "apiserver-health error" or item.endswith(" flapping") for item in notified), shown
        assert tally.cloud[cloud]["held"], (cloud, shown)
    assert not faults.active(sandbox.state_dir)
