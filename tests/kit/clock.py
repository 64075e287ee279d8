"""The fixed `NOW` of unit tests that build their own objects: the moment the committed sandbox capture
(`tests/fixtures/sandbox/healthy.json`) was taken, so every test shares one instant and it is a real one.

A test over a capture of its own judges with that capture's `captured_at` instead (`kit.managers`,
`kit.node_fixtures`): ages in captured objects (Lease renewTime, NodeMetric updateTime, Event timestamps) are then
judged against the instant they were read at, so a healthy capture stays healthy forever and a stale one stale.
"""

from __future__ import annotations

from kit.captured import SANDBOX, load

NOW = load(SANDBOX / "healthy.json").captured_at.replace(microsecond=0)
"""In whole seconds, as the API server keeps the times a test builds its objects with."""
