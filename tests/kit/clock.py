"""The fixed `NOW` of unit tests: the moment the sandbox fixtures were captured (fixtures/sandbox/captured_at.txt).

Ages in captured objects (Lease renewTime, NodeMetric updateTime, Event timestamps) are judged against
this instant, so a healthy capture stays healthy forever and a stale one stays stale.
"""

from __future__ import annotations

from datetime import UTC, datetime

NOW = datetime(2026, 12, 3, 11, 45, 0, tzinfo=UTC)
