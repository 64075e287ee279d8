"""Shared by every tier: each test starts as a cold function instance."""

from collections.abc import Iterator

import pytest

from outpost.cluster import warm


@pytest.fixture(autouse=True)
def _cold_instance() -> Iterator[None]:
    """What one test's runs kept (`outpost.cluster.warm`) is not seen by the next: tests that exercise a warm
    instance run it twice within themselves."""
    warm.forget()
    yield
    warm.forget()
