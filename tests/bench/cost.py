"""What the whole catalogue costs on AWS Lambda (arm64) per cluster-month, from measured runs.

Model (printed with the figures, so a reader can redo the arithmetic):
- every check runs every minute (the catalogue's most frequent schedule, applied to all: an upper bound), i.e.
  `INVOCATIONS_PER_MONTH` requests per function;
- billed duration per invocation, rounded up to 1 ms: warm = a second invocation in the same process (the check
  and the heartbeat; secrets are cached per cold start); cold = the init (the entry module's import: Lambda bills
  the init phase too) plus the first invocation (the secret fetch with its lazy boto3 import, the check, the
  heartbeat). An every-minute schedule keeps an instance warm most of the time: the truth is near the warm figure;
- duration at another memory size: Lambda gives a function CPU in proportion to its memory (one full vCPU at
  `FULL_VCPU_MB`). The measured time is split into CPU time (user + system of the process) and waiting (network,
  the API server); waiting is taken as unchanged and CPU time as scaled by `FULL_VCPU_MB / memory` below one vCPU.
  So below one vCPU the CPU part costs the same GB-seconds at any size and the waiting part costs more the larger
  the size: the cheapest size is the smallest that holds the process, peak RSS plus `HEADROOM`;
- no free tier, no Savings Plans, list prices of US East (N. Virginia).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

PRICES_SOURCE: Final = "aws.amazon.com/lambda/pricing (Arm, US East N. Virginia), looked up 2026-12-03"
ARM64_USD_PER_GB_SECOND: Final = 0.0000133334
"""Arm price per GB-second, first 7.5 billion GB-seconds a month."""
USD_PER_REQUEST: Final = 0.20 / 1_000_000
"""$0.20 per million requests (both architectures)."""
FULL_VCPU_MB: Final = 1769
"""Lambda's documented memory size at which a function has the equivalent of one full vCPU."""
MIN_MB: Final = 128
MAX_MB: Final = 10_240
HEADROOM: Final = 1.25
"""Memory size >= peak RSS x this (Lambda kills a function that reaches its size; RSS varies run to run)."""
INVOCATIONS_PER_MONTH: Final = 60 * 24 * 365 // 12  # every minute: 43,800


@dataclass(frozen=True)
class RunSample:
    """One check's measured runs in a fresh interpreter: init = the entry module's import, run = the first
    invocation, warm = the second."""

    check: str
    init_seconds: float
    init_cpu_seconds: float
    run_seconds: float
    run_cpu_seconds: float
    peak_rss_mb: float
    warm_seconds: float
    warm_cpu_seconds: float


def smallest_size_mb(peak_rss_mb: float) -> int:
    """The smallest Lambda memory size (1 MB steps, at least 128 MB) holding peak RSS with headroom."""
    return min(MAX_MB, max(MIN_MB, math.ceil(peak_rss_mb * HEADROOM)))


def scaled_seconds(wall: float, cpu: float, memory_mb: int) -> float:
    """Wall time at `memory_mb`: waiting unchanged, CPU time slowed below one full vCPU."""
    cpu = min(cpu, wall)
    return (wall - cpu) + cpu * max(1.0, FULL_VCPU_MB / memory_mb)


def invocation_usd(seconds: float, memory_mb: int) -> float:
    billed = math.ceil(seconds * 1000) / 1000
    return billed * (memory_mb / 1024) * ARM64_USD_PER_GB_SECOND + USD_PER_REQUEST


def monthly_usd(sample: RunSample, memory_mb: int, cold: bool) -> float:
    if cold:
        seconds = (scaled_seconds(sample.init_seconds, sample.init_cpu_seconds, memory_mb)
                   + scaled_seconds(sample.run_seconds, sample.run_cpu_seconds, memory_mb))
    else:
        seconds = scaled_seconds(sample.warm_seconds, sample.warm_cpu_seconds, memory_mb)
    return INVOCATIONS_PER_MONTH * invocation_usd(seconds, memory_mb)


def candidate_sizes(floor_mb: int) -> list[int]:
    return [floor_mb, *range(256, 3072 + 1, 128)] if floor_mb < 256 else [floor_mb, *range(
        (floor_mb // 128 + 1) * 128, 3072 + 1, 128)]


@dataclass(frozen=True)
class CheckCost:
    check: str
    memory_mb: int
    warm_usd: float
    cold_usd: float


def cheapest(sample: RunSample) -> CheckCost:
    """The size (among those that hold the process) with the lowest monthly cost when warm."""
    floor = smallest_size_mb(sample.peak_rss_mb)
    best = min(candidate_sizes(floor), key=lambda size: (monthly_usd(sample, size, cold=False), size))
    return CheckCost(sample.check, best, monthly_usd(sample, best, cold=False), monthly_usd(sample, best, cold=True))


def catalogue(samples: list[RunSample]) -> tuple[list[CheckCost], float, float]:
    """Each check at its cheapest size, and the catalogue's monthly total warm and all-cold."""
    costs = [cheapest(sample) for sample in samples]
    return costs, sum(c.warm_usd for c in costs), sum(c.cold_usd for c in costs)
