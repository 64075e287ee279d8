"""`outpost.kube.selectors` against upstream's own test tables: k8s.io/apimachinery@v0.37.2
`pkg/labels/selector_test.go` and `pkg/apis/meta/v1/helpers.go` (LabelSelectorAsSelector).

Expected values are what the real `labels.Parse`, `Selector.Matches` and `labels.NewRequirement` returned (a Go
program, recorded as static tables in `tests/unit/fixtures/upstream/selectors.json`, read by `kit.upstream_vectors`);
rows marked "outpost" are added edge cases computed the same way. Deliberate differences (docs/contracts.md "Parsing
as upstream"): `=`/`==`/`!=` are In/NotIn with one value (so `==` renders as `=`), and requirements keep their
written order (tables compare them sorted).
"""

from __future__ import annotations

import pytest

from kit.upstream_vectors import rows, source
from outpost.kube.selectors import LabelSelector, Requirement, lex, parse_label_selector

UPSTREAM = source("selectors")

PARSE = rows("selectors", "parse")
"""(input, requirements upstream's labels.Parse returned (None: an error), where the input comes from)."""
MATCHES = rows("selectors", "matches")
"""(selector, labels, upstream's Matches (None: the selector does not parse), source)."""
REQUIREMENTS = rows("selectors", "requirements")
"""(key, upstream selection.Operator, values, upstream NewRequirement accepted it, source)."""

_OPERATORS = {
    "in": "In",
    "notin": "NotIn",
    "exists": "Exists",
    "!": "DoesNotExist",
    "gt": "Gt",
    "lt": "Lt",
    "=": "In",
    "==": "In",
    "!=": "NotIn",
}
_NOT_REPRESENTABLE = {("x5", "=")}
"""TestRequirementConstructor rows the project cannot express: an Equals with two values (module doc)."""


def _normalised(selector: LabelSelector) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((r.key, r.operator, tuple(sorted(set(r.values)))) for r in selector.requirements)


def _id(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:20] + "..." + text[-8:]) + f"(len {len(text)})"


@pytest.mark.parametrize(("text", "expected", "source"), PARSE, ids=[f"{_id(t)}-{s}" for t, _, s in PARSE])
def test_parse_as_upstream(
    text: str, expected: tuple[tuple[str, str, tuple[str, ...]], ...] | None, source: str
) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="invalid label selector"):
            parse_label_selector(text)
        return
    selector = parse_label_selector(text)
    assert _normalised(selector) == sorted(expected), f"{UPSTREAM} {source}"
    # What outpost renders (the labelSelector query it sends) reads back as the same requirements.
    assert _normalised(parse_label_selector(selector.to_query())) == sorted(expected)


@pytest.mark.parametrize(
    ("text", "labels", "matches", "source"), MATCHES, ids=[f"{_id(t)}-{labels}-{s}" for t, labels, _, s in MATCHES]
)
def test_matches_as_upstream(text: str, labels: dict[str, str], matches: bool | None, source: str) -> None:
    if matches is None:
        with pytest.raises(ValueError, match="invalid label selector"):
            parse_label_selector(text)
        return
    assert parse_label_selector(text).matches(labels) is matches, f"{UPSTREAM} {source}"


@pytest.mark.parametrize(
    ("key", "operator", "values", "valid", "source"),
    REQUIREMENTS,
    ids=[f"{_id(k)}-{o}-{s}" for k, o, _, _, s in REQUIREMENTS],
)
def test_requirement_constructor_as_upstream(
    key: str, operator: str, values: tuple[str, ...], valid: bool, source: str
) -> None:
    if (key, operator) in _NOT_REPRESENTABLE:
        # Deliberate difference: In with two values is valid here; the string form cannot write `x=a` with two.
        assert Requirement(key, "In", values)
        return
    mapped = _OPERATORS.get(operator, operator)
    if valid:
        assert Requirement(key, mapped, values)  # type: ignore[arg-type]
    else:
        with pytest.raises(ValueError, match=r"selector operator|label key|label value"):
            Requirement(key, mapped, values)  # type: ignore[arg-type]


# TestLexer: one token per input (Lex returns the longest valid token; other characters are identifiers).
LEXER = rows("selectors", "lexer")


@pytest.mark.parametrize(("text", "token"), LEXER)
def test_lexer_as_upstream(text: str, token: str) -> None:
    first = lex(text)[0]
    assert first[0] == token, f"{UPSTREAM} TestLexer"
    assert first[1] == text


# TestLexerSequence and TestParserLookahead (which adds the final EndOfString).
SEQUENCES = rows("selectors", "sequences")


@pytest.mark.parametrize(("text", "tokens"), SEQUENCES)
def test_lexer_sequence_as_upstream(text: str, tokens: tuple[str, ...]) -> None:
    assert [token for token, _ in lex(text)] == [*tokens, "EndOfString"], f"{UPSTREAM} TestLexerSequence"


# TestToString: upstream's rendering of each selector reads back (here) as the same requirements, and what
# outpost renders means the same (its text differs only by `x in (a)` -> `x=a` and `==` -> `=`).
TO_STRING = rows("selectors", "to_string")


@pytest.mark.parametrize(("text", "requirements"), TO_STRING)
def test_to_string_as_upstream(text: str, requirements: tuple[tuple[str, str, tuple[str, ...]], ...]) -> None:
    built = LabelSelector(tuple(Requirement(k, o, v) for k, o, v in requirements))  # type: ignore[arg-type]
    assert _normalised(parse_label_selector(text)) == _normalised(built), f"{UPSTREAM} TestToString"
    assert _normalised(parse_label_selector(built.to_query())) == _normalised(built)
    # TestToString's invalid row: a trailing ',' (an empty requirement) is refused.
    with pytest.raises(ValueError, match="invalid label selector"):
        parse_label_selector(text + ",")


# k8s.io/apimachinery@v0.37.2 pkg/apis/meta/v1/helpers.go LabelSelectorAsSelector: the object form knows In,
# NotIn, Exists, DoesNotExist only, and validates matchLabels as Equals requirements.
@pytest.mark.parametrize(
    ("raw", "valid"),
    [
        ({"matchExpressions": [{"key": "x", "operator": "Gt", "values": ["1"]}]}, False),
        ({"matchExpressions": [{"key": "x", "operator": "Lt", "values": ["1"]}]}, False),
        ({"matchExpressions": [{"key": "x", "operator": "in", "values": ["1"]}]}, False),
        ({"matchExpressions": [{"key": "x", "operator": "In", "values": [""]}]}, True),
        ({"matchExpressions": [{"key": "x", "operator": "In", "values": []}]}, False),
        ({"matchLabels": {"x": ""}}, True),
        ({"matchLabels": {"x": "a b"}}, False),
        ({"matchLabels": {"a" * 64: "v"}}, False),
        ({"matchLabels": {"x": "v\n"}}, False),
    ],
)
def test_object_form_as_upstream(raw: dict[str, object], valid: bool) -> None:
    if valid:
        assert LabelSelector.from_api(raw)
    else:
        with pytest.raises(ValueError, match=r"operator|label|values"):
            LabelSelector.from_api(raw)
