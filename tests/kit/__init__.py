"""Test kit: a fake API server under the real `Cluster`, captured sandbox fixtures, a fixed clock.

`from kit import FakeApiServer, fake_cluster, NOW, fixture` in any test (tests have `pythonpath = ["tests"]`).
"""

from kit.clock import NOW
from kit.fake_cluster import FakeApiServer, Recorded, fake_cluster
from kit.fixtures import FIXTURES, fixture, fixtures, health_body, load_state

__all__ = [
    "FIXTURES",
    "NOW",
    "FakeApiServer",
    "Recorded",
    "fake_cluster",
    "fixture",
    "fixtures",
    "health_body",
    "load_state",
]
