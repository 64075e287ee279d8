"""Test kit: a fake API server under the real `Cluster`, captured sandbox output (`kit.captured`), a fixed clock.

`from kit import FakeApiServer, fake_cluster, NOW` in any test (tests have `pythonpath = ["tests"]`).
"""

from kit.clock import NOW
from kit.fake_cluster import FakeApiServer, Recorded, fake_cluster

__all__ = ["NOW", "FakeApiServer", "Recorded", "fake_cluster"]
