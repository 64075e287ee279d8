"""Decoding LIST pages into outline views, today's way against faster decoders (issue 21 item 4). One run:

    PYTHONPATH=tests .venv/bin/python -m bench.decoders [--count 5000] [--page-sizes 250 500] [--repeat 5]

The 5,000 objects per kind of bench/decode_pages.py are decoded and reduced by each contender (`pydantic-page`,
`json+parse`, `msgspec`, `production`); printed: CPU, wall, peak memory in a fresh child, the cold first page and
ratios; asserted: every decoder gives the same facts, and each one's strictness is probed.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import ssl
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import httpx
import msgspec
from pydantic import ValidationError

from bench.decode_pages import COUNT, KINDS, NOW, PAGE_SIZES, captured, pages
from outpost.cluster.client import Cluster, _page_adapter, loads_json
from outpost.errors import MalformedResponse
from outpost.kube import fast_outlines
from outpost.kube.daemons import daemon_pod
from outpost.kube.fast_outlines import FastKubeObject, FastPage
from outpost.kube.nodes import nodemetric_usage, outline_facts
from outpost.kube.objects import Lease, NodeMetricOutline, NodeOutline, PodOutline, View, parse
from outpost.kube.timestamps import age_seconds

WHERE = "LIST bench"
VIEWS: dict[str, type[View]] = {"node": NodeOutline, "pod": PodOutline, "nodemetric": NodeMetricOutline, "lease": Lease}


def lease_facts(lease: Any) -> tuple[str, str, int, float | None]:
    """What kwok-node-consistency reads of a node Lease: name, holder, duration, age at NOW."""
    return (
        lease.name,
        lease.spec.holder_identity,
        lease.spec.lease_duration_seconds,
        age_seconds(lease.spec.renew_time, NOW),
    )


REDUCE: dict[str, Callable[[Any], object]] = {
    "node": lambda node: outline_facts(node, WHERE),
    "pod": lambda pod: daemon_pod(pod, WHERE),
    "nodemetric": lambda metric: nodemetric_usage(metric, WHERE),
    "lease": lease_facts,
}


# -- msgspec mirrors: production's (outpost.kube.fast_outlines) for the outline views, one here for the Lease ------

Aware = Annotated[datetime, msgspec.Meta(tz=True)]
"""pydantic's AwareDatetime: an RFC 3339 time with a zone; one without is a validation error."""


class MLeaseSpec(msgspec.Struct, frozen=True, rename="camel"):
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: Aware | None = None
    renew_time: Aware | None = None
    lease_transitions: int = 0


class MLease(FastKubeObject, frozen=True):
    """A node Lease (no production mirror: kwok-node-consistency keeps the view whole)."""

    spec: MLeaseSpec = msgspec.field(default_factory=MLeaseSpec)


MIRRORS: dict[str, type[FastKubeObject]] = {
    **{kind: fast_outlines.MIRRORS[view] for kind, view in VIEWS.items() if view in fast_outlines.MIRRORS},
    "lease": MLease,
}


def page_type(kind: str) -> Any:
    """`FastPage[<the kind's mirror>]`, what a decoder is built for."""
    generic: Any = FastPage
    return generic[MIRRORS[kind]]


# -- the contenders -------------------------------------------------------------------------------------------

Decode = Callable[[list[bytes]], list[object]]


def per_page(items_of: Callable[[bytes], Iterable[Any]], reduce: Callable[[Any], object]) -> Decode:
    """A decoder: every page's items as `items_of` gives them, each reduced, in order (what differs between the
    contenders is `items_of` alone)."""

    def decode(bodies: list[bytes]) -> list[object]:
        facts: list[object] = []
        for body in bodies:
            facts.extend(reduce(item) for item in items_of(body))
        return facts

    return decode


def build_pydantic_page(kind: str) -> Decode:
    adapter = _page_adapter(VIEWS[kind])
    return per_page(lambda body: adapter.validate_json(body).items, REDUCE[kind])


def build_json_parse(kind: str) -> Decode:
    view = VIEWS[kind]
    view.model_rebuild()  # what the first `parse` would build (the views defer their validators)
    return per_page(lambda body: (parse(view, item, WHERE) for item in loads_json(body, WHERE)["items"]), REDUCE[kind])


def build_msgspec(kind: str) -> Decode:
    decoder = msgspec.json.Decoder(page_type(kind), strict=False)
    return per_page(lambda body: decoder.decode(body).items, REDUCE[kind])


def build_production(kind: str) -> Decode:
    """What `Cluster.iter_pages_as` runs per page: the mirror's decoder (strict, UTF-8 checked), the view for a page
    it refuses; a kind without a mirror is today's path."""
    fast = fast_outlines.page_decoder(VIEWS[kind])
    adapter = _page_adapter(VIEWS[kind])

    def items_of(body: bytes) -> Sequence[object]:
        if fast is not None:
            try:
                return fast.decode(body).items
            except fast_outlines.Refused:
                pass
        return adapter.validate_json(body).items

    return per_page(items_of, REDUCE[kind])


CONTENDERS: dict[str, Callable[[str], Decode]] = {
    "pydantic-page": build_pydantic_page,
    "json+parse": build_json_parse,
    "msgspec": build_msgspec,
    "production": build_production,
}
TODAY = "pydantic-page"


def best_times(decode: Decode, bodies: list[bytes], repeat: int) -> tuple[float, float]:
    """(CPU, wall) seconds, the best of `repeat` runs each."""
    cpu, wall = [], []
    for _ in range(repeat):
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        decode(bodies)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def child(path: str, kind: str, contender: str) -> None:
    """In a fresh interpreter: build the decoder and decode the first page (each timed: a cold start's cost), then
    the peak memory of decoding every page once (RSS growth), and tracemalloc's peak of doing it again."""
    with open(path, "rb") as handle:
        bodies: list[bytes] = pickle.load(handle)  # noqa: S301 - written by this benchmark's parent
    started = time.perf_counter()
    decode = CONTENDERS[contender](kind)
    setup = time.perf_counter() - started
    gc.collect()
    before = _reset_peak_rss()
    started = time.perf_counter()
    decode(bodies[:1])
    first = time.perf_counter() - started
    facts = decode(bodies)
    rss = _status_kb("VmHWM") - before
    del facts
    gc.collect()
    tracemalloc.start()
    facts = decode(bodies)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "setup_ms": setup * 1000,
                "first_page_ms": first * 1000,
                "rss_kb": rss,
                "traced": traced,
                "objects": len(facts),
            }
        )
    )


def _status_kb(field: str) -> int:
    """A `/proc/self/status` figure in kB (VmRSS: now; VmHWM: the peak since the last reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def _reset_peak_rss() -> int:
    """Reset the peak RSS to the current RSS and return it, in kB. (`ru_maxrss` will not do: Linux carries the
    parent's peak across fork and exec, so a child of this big parent would report the parent's.)"""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kb("VmRSS")


def memory(path: Path, kind: str, contender: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.decoders", "--child", str(path), kind, contender],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def through_cluster(kind: str, bodies: list[bytes], page_size: int) -> list[object]:
    """The facts `Cluster.iter_list_as` gives over a mock API server serving `bodies` (not timed: it proves the
    timed adapter is the production path)."""
    by_token = {"": 0}
    for index, body in enumerate(bodies[:-1]):
        by_token[json.loads(body)["metadata"]["continue"]] = index + 1

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["limit"] == str(page_size)
        return httpx.Response(
            200,
            content=bodies[by_token[request.url.params.get("continue", "")]],
            headers={"Content-Type": "application/json"},
        )

    with Cluster(
        "bench",
        "https://bench.invalid",
        verify=ssl.create_default_context(),
        page_size=page_size,
        transport=httpx.MockTransport(handler),
    ) as cluster:
        return [REDUCE[kind](view) for view in cluster.iter_list_as(VIEWS[kind], "/bench")]


# -- strictness: what each decoder does with a wrong-typed field ------------------------------------------------

PROBES: list[tuple[str, str, tuple[str | int, ...], Any]] = [
    # (what, kind, path in the object, value)
    ('leaseDurationSeconds "40" (numeric string)', "lease", ("spec", "leaseDurationSeconds"), "40"),
    ("leaseDurationSeconds 40.0 (integral float)", "lease", ("spec", "leaseDurationSeconds"), 40.0),
    ("leaseDurationSeconds 40.5", "lease", ("spec", "leaseDurationSeconds"), 40.5),
    ('unschedulable "true" (string)', "node", ("spec", "unschedulable"), "true"),
    ("unschedulable 1 (number)", "node", ("spec", "unschedulable"), 1),
    ("label value 1 (number)", "node", ("metadata", "labels", "type"), 1),
    ("metadata.name 5 (number)", "node", ("metadata", "name"), 5),
    ("condition status true (bool)", "node", ("status", "conditions", 0, "status"), True),
    ("conditions null", "node", ("status", "conditions"), None),
    ("allocatable cpu 32 (number)", "node", ("status", "allocatable", "cpu"), 32),
    ("allocatable cpu 32.5 (float)", "node", ("status", "allocatable", "cpu"), 32.5),
    ("renewTime without a zone", "lease", ("spec", "renewTime"), "2026-12-05T17:09:27.934575"),
    ("renewTime with nanoseconds", "lease", ("spec", "renewTime"), "2026-12-05T17:09:27.934575123Z"),
    ("renewTime +02:00 offset", "lease", ("spec", "renewTime"), "2026-12-05T19:09:27+02:00"),
    ('renewTime "yesterday"', "lease", ("spec", "renewTime"), "yesterday"),
    ("renewTime 1764954567 (epoch number)", "lease", ("spec", "renewTime"), 1764954567),
    (
        "condition heartbeat without a zone",
        "node",
        ("status", "conditions", 0, "lastHeartbeatTime"),
        "2026-12-05T17:03:30",
    ),
    ("deletionTimestamp null", "pod", ("metadata", "deletionTimestamp"), None),
    ('deletionTimestamp "null" (string)', "pod", ("metadata", "deletionTimestamp"), "null"),
    ('generation "1e3" (string)', "node", ("metadata", "generation"), "1e3"),
    ("creationTimestamp 30000000000 (epoch number)", "node", ("metadata", "creationTimestamp"), 30000000000),
    ("updateTime with 7 fractional digits", "nodemetric", ("status", "updateTime"), "2026-12-05T17:09:27.9999999Z"),
    ("spec.node_name (the view's Python name)", "pod", ("spec", "node_name"), "n9"),
    ("condition without type", "node", ("status", "conditions", 0, "type"), ...),
]


def _mutated(kind: str, path: tuple[str | int, ...], value: Any) -> bytes:
    item: Any = captured(kind)
    target = item
    for key in path[:-1]:
        target = target[key]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps({"metadata": {}, "items": [item]}).encode()


def strictness() -> list[tuple[str, str, str, str, str]]:
    """(probe, today's outcome, msgspec strict, msgspec strict=False, production): `ok` or the first line of the
    error."""
    rows: list[tuple[str, str, str, str, str]] = []
    for what, kind, path, value in PROBES:
        body = _mutated(kind, path, value)
        try:
            _page_adapter(VIEWS[kind]).validate_json(body)
            today = "ok"
        except ValidationError:
            try:  # the message production gives (`_malformed_page` re-parses the item with `parse`)
                parse(VIEWS[kind], json.loads(body)["items"][0], WHERE)
                today = "rejected"
            except MalformedResponse as error:
                today = str(error)
        outcomes: list[str] = []
        for strict in (True, False):
            try:
                msgspec.json.Decoder(page_type(kind), strict=strict).decode(body)
                outcomes.append("ok")
            except msgspec.ValidationError as error:
                outcomes.append(f"error: {error}")
        rows.append((what, today, outcomes[0], outcomes[1], _production_outcome(kind, body, today)))
    return rows


def _production_outcome(kind: str, body: bytes, today: str) -> str:
    """`Cluster.iter_pages_as`: the mirror's page, or the view's outcome for a page the mirror refuses."""
    fast = fast_outlines.page_decoder(VIEWS[kind])
    if fast is None:
        return today
    try:
        fast.decode(body)
    except fast_outlines.Refused:
        return today
    return "ok"


# -- the run ----------------------------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    for line in (header, ["-" * width for width in widths], *rows):
        print(
            "  ".join(
                str(cell).rjust(width) if n else str(cell).ljust(width)
                for n, (cell, width) in enumerate(zip(line, widths, strict=True))
            ).rstrip()
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--page-sizes", type=int, nargs="+", default=list(PAGE_SIZES))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--child", nargs=3, metavar=("PAGES", "KIND", "CONTENDER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return
    print(
        f"python {sys.version.split()[0]}, pydantic-core {_core_version()}, msgspec {msgspec.__version__}; "
        f"{args.count} objects a kind, CPU/wall best of {args.repeat}, memory from a fresh child per contender"
    )
    rows: list[list[str]] = []
    checked = 0
    with tempfile.TemporaryDirectory() as scratch:
        for kind in args.kinds:
            for page_size in args.page_sizes:
                bodies = pages(kind, args.count, page_size)
                size = sum(len(body) for body in bodies)
                path = Path(scratch) / f"{kind}-{page_size}.pickle"
                path.write_bytes(pickle.dumps(bodies))
                decoders = {name: build(kind) for name, build in CONTENDERS.items()}
                today_facts = decoders[TODAY](bodies)
                assert len(today_facts) == args.count
                assert through_cluster(kind, bodies, page_size) == today_facts, f"{kind}: iter_list_as differs"
                for name, decode in decoders.items():
                    facts = decode(bodies)
                    for index, (got, want) in enumerate(zip(facts, today_facts, strict=True)):
                        assert got == want, f"{kind} object {index}: {name} gives {got!r}, {TODAY} {want!r}"
                    checked += len(facts)
                measured = {
                    name: (*best_times(decode, bodies, args.repeat), memory(path, kind, name))
                    for name, decode in decoders.items()
                }
                base_cpu, base_wall, base_mem = measured[TODAY]
                for name, (cpu, wall, mem) in measured.items():
                    rows.append(
                        [
                            kind,
                            str(page_size),
                            f"{size / 1e6:.1f}",
                            name,
                            f"{cpu:.3f}",
                            f"{base_cpu / cpu:.2f}x",
                            f"{cpu / args.count * 1e6:.1f}",
                            f"{wall:.3f}",
                            f"{base_wall / wall:.2f}x",
                            f"{mem['rss_kb'] / 1024:.1f}",
                            _ratio(mem["rss_kb"], base_mem["rss_kb"]),
                            f"{mem['traced'] / 2**20:.1f}",
                            _ratio(mem["traced"], base_mem["traced"]),
                            f"{mem['setup_ms'] + mem['first_page_ms']:.1f}",
                            f"{wall / len(bodies) * 1000:.1f}",
                        ]
                    )
                print(f"  measured {kind}, pages of {page_size}", file=sys.stderr)
    print()
    _table(
        [
            "kind",
            "page",
            "MB",
            "decoder",
            "CPU s",
            "speedup",
            "us/obj",
            "wall s",
            "speedup",
            "peak RSS+ MB",
            "x today",
            "traced MB",
            "x today",
            "cold 1st page ms",
            "warm page ms",
        ],
        rows,
    )
    print(f"\nsame facts: yes ({checked} objects compared against {TODAY}, and Cluster.iter_list_as agrees)")
    print(f"import msgspec in a process that has already imported outpost: {_msgspec_import_ms():.1f} ms (best of 5)")
    print(
        "\nstrictness: one item with a wrong-typed field (today: pydantic lax mode; msgspec strict by default);"
        " * = msgspec differs from today\n"
    )
    probes = strictness()
    _table(
        ["probe", "today", "msgspec", "msgspec strict=False", "production"],
        [
            [
                what,
                _short(today),
                *(
                    _short(other) + (" *" if _short(other) != _short(today) else "")
                    for other in (strict, lax, production)
                ),
            ]
            for what, today, strict, lax, production in probes
        ],
    )
    print("\nthe messages, today's (MalformedResponse from `parse`) and msgspec's (ValidationError):")
    for what, today, strict, _, _ in probes:
        if today != "ok" or strict != "ok":
            print(f"  {what}\n    today:   {today}\n    msgspec: {strict}")


def _short(outcome: str) -> str:
    return "ok" if outcome == "ok" else "rejected"


def _msgspec_import_ms() -> float:
    code = (
        "import time, outpost.cluster.client, outpost.kube.nodes\n"
        "started = time.perf_counter()\nimport msgspec\nprint(time.perf_counter() - started)"
    )
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(5)
    ]
    return min(runs) * 1000


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base > 0 else "-"


def _core_version() -> str:
    import pydantic_core

    return str(pydantic_core.__version__)


if __name__ == "__main__":
    main()
