"""outpost.kube.webhooks: the pure wiring judgement, on the edges captured objects do not show (omitted fields,
empty lists, duplicated addresses, URL webhooks)."""

from __future__ import annotations

from typing import Any

import pytest

from outpost.kube import Endpoints, EndpointSlice, WebhookConfiguration, parse
from outpost.kube.paths import MUTATING_WEBHOOKS
from outpost.kube.webhooks import WebhookWiring, configuration_problems, ready_endpoints

WIRING = WebhookWiring("kruise-system", "kruise-webhook-service", 443, ("m",), ("v",))
LABELS = {"kubernetes.io/service-name": "kruise-webhook-service"}


def slice_(name: str, endpoints: list[dict[str, Any]], labels: dict[str, str] = LABELS) -> EndpointSlice:
    return parse(
        EndpointSlice,
        {"metadata": {"name": name, "namespace": "kruise-system", "labels": labels}, "endpoints": endpoints},
        "test",
    )


@pytest.mark.parametrize(
    ("slices", "ready", "not_ready"),
    [
        # `ready` omitted: unknown, which the EndpointSlice API says to treat as ready
        ([slice_("a", [{"addresses": ["10.0.0.1"]}])], ("10.0.0.1",), ()),
        ([slice_("a", [{"addresses": ["10.0.0.1"], "conditions": {"ready": False}}])], (), ("10.0.0.1",)),
        # the same address in two slices (e.g. mirrored) counts once; ready anywhere wins over not ready elsewhere
        (
            [
                slice_("a", [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]),
                slice_("b", [{"addresses": ["10.0.0.1"], "conditions": {"ready": False}}]),
            ],
            ("10.0.0.1",),
            (),
        ),
        # a slice with no endpoints at all (omitted list)
        ([slice_("a", [])], (), ()),
    ],
)
def test_ready_endpoints_from_slices(
    slices: list[EndpointSlice], ready: tuple[str, ...], not_ready: tuple[str, ...]
) -> None:
    observed = ready_endpoints("kruise-webhook-service", slices, None)
    assert (observed.source, observed.ready, observed.not_ready) == ("endpointslices", ready, not_ready)


def test_slices_of_other_services_are_ignored_and_endpoints_used() -> None:
    other = slice_("x", [{"addresses": ["10.0.0.9"]}], {"kubernetes.io/service-name": "other"})
    endpoints = parse(
        Endpoints,
        {
            "metadata": {"name": "kruise-webhook-service", "namespace": "kruise-system"},
            "subsets": [{"addresses": [{"ip": "10.0.0.2"}], "notReadyAddresses": [{"ip": "10.0.0.3"}]}],
        },
        "test",
    )
    observed = ready_endpoints("kruise-webhook-service", [other], endpoints)
    assert (observed.source, observed.ready, observed.not_ready) == ("endpoints", ("10.0.0.2",), ("10.0.0.3",))


def test_endpoints_without_subsets_are_zero_not_unknown() -> None:
    endpoints = parse(Endpoints, {"metadata": {"name": "kruise-webhook-service"}}, "test")
    assert ready_endpoints("kruise-webhook-service", [], endpoints).ready == ()
    assert ready_endpoints("kruise-webhook-service", [], None).source == "none"


def config(webhooks: list[dict[str, Any]] | None) -> WebhookConfiguration:
    raw: dict[str, Any] = {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"}}
    if webhooks is not None:
        raw["webhooks"] = webhooks
    return parse(WebhookConfiguration, raw, "test")


@pytest.mark.parametrize(
    ("webhooks", "problems"),
    [
        (
            None,
            [
                "mutatingwebhookconfiguration m: observed no webhooks "
                "(want webhooks calling service kruise-system/kruise-webhook-service:443)"
            ],
        ),
        (
            [{"name": "u", "clientConfig": {"url": "https://example.invalid/mutate"}}],
            [
                "mutatingwebhookconfiguration m: observed webhooks calling url https://example.invalid/mutate "
                "(want webhooks calling service kruise-system/kruise-webhook-service:443)"
            ],
        ),
        # the port omitted in clientConfig.service is Kubernetes' default, 443
        (
            [
                {
                    "name": "w",
                    "clientConfig": {"service": {"namespace": "kruise-system", "name": "kruise-webhook-service"}},
                }
            ],
            [],
        ),
        (
            [
                {
                    "name": "w",
                    "clientConfig": {
                        "service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "port": 9443}
                    },
                }
            ],
            ["mutatingwebhookconfiguration m webhook w: observed service port 9443 (want 443)"],
        ),
    ],
)
def test_configuration_problems(webhooks: list[dict[str, Any]] | None, problems: list[str]) -> None:
    assert configuration_problems(WIRING, MUTATING_WEBHOOKS, "m", config(webhooks)) == problems
