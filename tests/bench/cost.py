"""What the whole catalogue costs on AWS Lambda (arm64) per cluster-month, from measured runs.

The model is printed with the figures so a reader can redo it: every check every minute (an upper bound), billed
duration from measured warm runs with one cold start (init + first run) per `LAMBDA_HOURS_PER_COLD_START` hours,
CPU time scaled by `FULL_VCPU_MB / memory` below one vCPU while waiting is not (so the cheapest size is the
smallest that holds peak RSS + `HEADROOM`), US East list prices, no free tier.
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
HOURS_PER_MONTH: Final = 24 * 365 / 12  # 730

LAMBDA_WARM_SOURCES: Final = (
    "docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html",
    "repost.aws/questions/QUUveUH1fGR6SHB9ZvrBsTUA/lambda-runtime-refresh-period-limit",
    "mikhail.io/2019/08/aws-lambda-cold-starts-after-10-minutes/",
)
LAMBDA_HOURS_PER_COLD_START: Final = 2.0
"""Hours between two cold starts of one every-minute function on Lambda (the model's assumption).

What the sources say (looked up 2026-12-05):
- AWS, "Understanding the Lambda execution environment lifecycle"
  (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html): after an invocation "Lambda
  maintains the execution environment for some time in anticipation of another function invocation. However,
  Lambda terminates execution environments every few hours to allow for runtime updates and maintenance, even for
  functions that are invoked continuously."
- AWS re:Post, asked what "a few hours" is at most (https://repost.aws/questions/QUUveUH1fGR6SHB9ZvrBsTUA/
  lambda-runtime-refresh-period-limit): AWS does not publish these values; they can change.
- A public measurement (Mikhail Shilkov, https://mikhail.io/2019/08/aws-lambda-cold-starts-after-10-minutes/):
  since July 2019 an idle Lambda instance lives "for precisely 10 minutes after the last request" (25-60 minutes
  before). An every-minute schedule idles 1 minute, so idling never recycles it: only the "every few hours"
  termination does.
So: one cold start per "few" hours, taken as 2 (the low end of "a few": an upper bound on cold starts).
"""
GCP_WARM_SOURCES: Final = (
    "cloud.google.com/functions/1stgendocs/configuring/min-instances",
    "mikhail.io/2019/08/aws-lambda-cold-starts-after-10-minutes/",
)
GCP_HOURS_PER_COLD_START: Final = 2.0
"""The same assumption for Cloud Run functions (printed beside Lambda's; the cost model prices Lambda only).

- Google, "Configure minimum instances", "Idle instances and cold starts"
  (https://cloud.google.com/functions/1stgendocs/configuring/min-instances): "Cloud Run functions attempts to
  keep function instances idle for an unspecified amount of time after handling a request ... you are not billed
  for this idle time"; min instances (billed while idle) avoid cold starts beyond that.
- The same measurement (mikhail.io, 2019): "Google Cloud Functions has no fixed value, but most often, instances
  may survive several hours of inactivity".
Google documents no lifetime cap for a busy instance; the model assumes one as often as Lambda's.
"""


def cold_fraction(hours_per_cold_start: float, invocations_per_month: int = INVOCATIONS_PER_MONTH) -> float:
    """The share of invocations that are cold: one per `hours_per_cold_start` hours (at most every invocation)."""
    if hours_per_cold_start <= 0:
        return 1.0
    return min(1.0, HOURS_PER_MONTH / hours_per_cold_start / invocations_per_month)


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
        seconds = scaled_seconds(sample.init_seconds, sample.init_cpu_seconds, memory_mb) + scaled_seconds(
            sample.run_seconds, sample.run_cpu_seconds, memory_mb
        )
    else:
        seconds = scaled_seconds(sample.warm_seconds, sample.warm_cpu_seconds, memory_mb)
    return INVOCATIONS_PER_MONTH * invocation_usd(seconds, memory_mb)


def candidate_sizes(floor_mb: int) -> list[int]:
    return (
        [floor_mb, *range(256, 3072 + 1, 128)]
        if floor_mb < 256
        else [floor_mb, *range((floor_mb // 128 + 1) * 128, 3072 + 1, 128)]
    )


@dataclass(frozen=True)
class CheckCost:
    check: str
    memory_mb: int
    warm_usd: float
    cold_usd: float
    common_usd: float = math.nan
    """The common case: warm, but a `cold_fraction` of invocations cold."""


def common_usd(warm_usd: float, cold_usd: float, fraction: float) -> float:
    return (1 - fraction) * warm_usd + fraction * cold_usd


def cheapest(sample: RunSample, fraction: float | None = None) -> CheckCost:
    """The size (among those that hold the process) with the lowest monthly cost in the common case."""
    fraction = cold_fraction(LAMBDA_HOURS_PER_COLD_START) if fraction is None else fraction
    floor = smallest_size_mb(sample.peak_rss_mb)

    def common(size: int) -> float:
        return common_usd(monthly_usd(sample, size, cold=False), monthly_usd(sample, size, cold=True), fraction)

    best = min(candidate_sizes(floor), key=lambda size: (common(size), size))
    return CheckCost(
        sample.check, best, monthly_usd(sample, best, cold=False), monthly_usd(sample, best, cold=True), common(best)
    )


def catalogue(samples: list[RunSample], fraction: float | None = None) -> tuple[list[CheckCost], float, float]:
    """Each check at its cheapest size, and the catalogue's monthly total warm and all-cold."""
    costs = [cheapest(sample, fraction) for sample in samples]
    return costs, sum(c.warm_usd for c in costs), sum(c.cold_usd for c in costs)
