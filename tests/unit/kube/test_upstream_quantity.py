"""`outpost.kube.quantity` against upstream's own test tables: k8s.io/apimachinery@v0.37.2
`pkg/api/resource/quantity_test.go` (TestQuantityParse, TestParseQuantityString, TestJSONWhitespace).

Expected values are what the real `resource.ParseQuantity` returned (a Go program run once, recorded as static
tables in `tests/unit/fixtures/upstream/quantity.json`, read by `kit.upstream_vectors`); rows marked "outpost" are
added edge cases. Deliberate differences, marked where a table meets them (docs/contracts.md "Parsing as upstream"):
whitespace is trimmed as `UnmarshalJSON` does, millis/units never wrap past int64 and negatives round away from zero,
and there is no canonical string form.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from kit.upstream_vectors import rows, source
from outpost.kube.quantity import _split, cpu_millis, memory_bytes, parse_quantity, parse_quantity_format

UPSTREAM = source("quantity")
_WHITESPACE_TRIMMED = {" 1", "1 ", "\t1", "1\n", "\xa01"}
"""Inputs ParseQuantity refuses and UnmarshalJSON (so outpost) trims (module doc)."""

PARSE = rows("quantity", "parse")
"""(input, upstream's exact value (AsDec().String(); None: ParseQuantity returned an error), its Format,
MilliValue(), Value(), source)."""
JSON_WHITESPACE = rows("quantity", "json_whitespace")
"""TestJSONWhitespace: (the JSON value, upstream's value after UnmarshalJSON)."""
SPLIT = rows("quantity", "split")
"""TestParseQuantityString: (input, positive, value, num, denom, suffix)."""


def _id(text: str) -> str:
    return repr(text) if len(text) <= 30 else repr(text[:24]) + f"...(len {len(text)})"


@pytest.mark.parametrize(
    ("text", "value", "form", "milli", "units", "source"), PARSE, ids=[f"{_id(t)}-{s}" for t, *_, s in PARSE]
)
def test_parse_as_upstream(
    text: str, value: str | None, form: str | None, milli: int | None, units: int | None, source: str
) -> None:
    if value is None and text in _WHITESPACE_TRIMMED:
        assert parse_quantity(text) == parse_quantity(text.strip(" \t\n\xa0"))  # deliberate: UnmarshalJSON trims
        return
    if value is None:
        with pytest.raises(ValueError, match="not a quantity"):
            parse_quantity(text)
        return
    parsed, parsed_form = parse_quantity_format(text)
    assert parsed == Decimal(value), f"{UPSTREAM} {source}"
    assert parsed_form == form
    assert milli is not None
    assert units is not None
    exact = Decimal(value)
    if exact >= 0 and exact * 1000 < 2**63:  # where upstream's int64 neither wrapped nor went negative
        assert cpu_millis(text) == milli
        assert memory_bytes(text) == units
    elif exact < 0:  # deliberate: away from zero, whichever internal form upstream held
        assert cpu_millis(text) == -int((-exact * 1000).to_integral_value(rounding="ROUND_CEILING"))
        assert memory_bytes(text) == -int((-exact).to_integral_value(rounding="ROUND_CEILING"))


@pytest.mark.parametrize(("raw", "value"), JSON_WHITESPACE)
def test_json_whitespace_as_upstream(raw: str, value: str) -> None:
    # UnmarshalJSON strips the quotes and TrimSpace()s; parse_quantity receives the decoded JSON value.
    text = raw.strip()
    text = text[1:-1] if text.startswith('"') else text
    assert parse_quantity(text) == Decimal(value), f"{UPSTREAM} TestJSONWhitespace"


@pytest.mark.parametrize(("text", "positive", "value", "numerator", "fraction", "suffix"), SPLIT)
def test_parse_quantity_string_as_upstream(
    text: str, positive: bool, value: str, numerator: str, fraction: str, suffix: str
) -> None:
    assert _split(text) == (positive, value, numerator, fraction, suffix), f"{UPSTREAM} TestParseQuantityString"


@pytest.mark.parametrize("value", [True, None, [], 1j])
def test_what_is_not_text_or_a_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(value)  # type: ignore[arg-type]
