"""`outpost.kube.selectors` against upstream's own test tables: k8s.io/apimachinery@v0.37.2
`pkg/labels/selector_test.go` and `pkg/apis/meta/v1/helpers.go` (LabelSelectorAsSelector).

Expected values are what the real `labels.Parse`, `Selector.Matches` and `labels.NewRequirement` returned (a Go
program, recorded as static tables); rows marked "outpost" are added edge cases computed the same way. Deliberate
differences (docs/contracts.md "Parsing as upstream"): `=`/`==`/`!=` are In/NotIn with one value (so `==` renders
as `=`), and requirements keep their written order (tables compare them sorted).
"""

from __future__ import annotations

import pytest

from outpost.kube.selectors import LabelSelector, Requirement, lex, parse_label_selector

UPSTREAM = "k8s.io/apimachinery@v0.37.2 pkg/labels/selector_test.go"

PARSE: list[tuple[str, list[tuple[str, str, tuple[str, ...]]] | None, str]] = [
    # (input, requirements upstream's labels.Parse returned (None: an error), where the input comes from)
    ("x=a,y=b,z=c", [("x", "In", ("a",)), ("y", "In", ("b",)), ("z", "In", ("c",))], "TestSelectorParse"),
    ("", [], "TestSelectorParse"),
    ("x!=a,y=b", [("x", "NotIn", ("a",)), ("y", "In", ("b",))], "TestSelectorParse"),
    ("x=", [("x", "In", ("",))], "TestSelectorParse"),
    ("x= ", [("x", "In", ("",))], "TestSelectorParse"),
    ("x=,z= ", [("x", "In", ("",)), ("z", "In", ("",))], "TestSelectorParse"),
    ("x= ,z= ", [("x", "In", ("",)), ("z", "In", ("",))], "TestSelectorParse"),
    ("!x", [("x", "DoesNotExist", ())], "TestSelectorParse"),
    ("x>1", [("x", "Gt", ("1",))], "TestSelectorParse"),
    ("x>1,z<5", [("x", "Gt", ("1",)), ("z", "Lt", ("5",))], "TestSelectorParse"),
    ("x=a||y=b", None, "TestSelectorParse"),
    ("x==a==b", None, "TestSelectorParse"),
    ("!x=a", None, "TestSelectorParse"),
    ("x<a", None, "TestSelectorParse"),
    ("x=a,a=x", [("a", "In", ("x",)), ("x", "In", ("a",))], "TestDeterministicParse"),
    ("a=x,x=a", [("a", "In", ("x",)), ("x", "In", ("a",))], "TestDeterministicParse"),
    ("", [], "TestSetSelectorParser"),
    ("\rx", [("x", "Exists", ())], "TestSetSelectorParser"),
    (
        "this-is-a-dns.domain.com/key-with-dash",
        [("this-is-a-dns.domain.com/key-with-dash", "Exists", ())],
        "TestSetSelectorParser",
    ),
    (
        "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        [("this-is-another-dns.domain.com/key-with-dash", "In", ("so", "what"))],
        "TestSetSelectorParser",
    ),
    (
        "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
        [("0.1.2.domain/99", "NotIn", ("10.10.100.1", "tick.tack.clock"))],
        "TestSetSelectorParser",
    ),
    ("foo  in\t (abc)", [("foo", "In", ("abc",))], "TestSetSelectorParser"),
    ("x notin\n (abc)", [("x", "NotIn", ("abc",))], "TestSetSelectorParser"),
    ("x  notin\t\t\t(abc,def)", [("x", "NotIn", ("abc", "def"))], "TestSetSelectorParser"),
    ("x in (abc,def)", [("x", "In", ("abc", "def"))], "TestSetSelectorParser"),
    ("x in (abc,)", [("x", "In", ("", "abc"))], "TestSetSelectorParser"),
    ("x in (abc,abc)", [("x", "In", ("abc",))], "TestSetSelectorParser"),
    ("x in ()", [("x", "In", ("",))], "TestSetSelectorParser"),
    ("x in (a,,)", [("x", "In", ("", "a"))], "TestSetSelectorParser"),
    ("x in (a,,,)", [("x", "In", ("", "a"))], "TestSetSelectorParser"),
    ("x in (a,,,,,,)", [("x", "In", ("", "a"))], "TestSetSelectorParser"),
    ("x in (a,,a,,a,,a,,)", [("x", "In", ("", "a"))], "TestSetSelectorParser"),
    (
        "x notin (abc,,def),bar,z in (),w",
        [("bar", "Exists", ()), ("w", "Exists", ()), ("x", "NotIn", ("", "abc", "def")), ("z", "In", ("",))],
        "TestSetSelectorParser",
    ),
    ("x,y in (a)", [("x", "Exists", ()), ("y", "In", ("a",))], "TestSetSelectorParser"),
    ("x=a", [("x", "In", ("a",))], "TestSetSelectorParser"),
    ("x>1", [("x", "Gt", ("1",))], "TestSetSelectorParser"),
    ("x<7", [("x", "Lt", ("7",))], "TestSetSelectorParser"),
    ("x=a,y!=b", [("x", "In", ("a",)), ("y", "NotIn", ("b",))], "TestSetSelectorParser"),
    (
        "x=a,y!=b,z in (h,i,j)",
        [("x", "In", ("a",)), ("y", "NotIn", ("b",)), ("z", "In", ("h", "i", "j"))],
        "TestSetSelectorParser",
    ),
    ("x=a||y=b", None, "TestSetSelectorParser"),
    ("x,,y", None, "TestSetSelectorParser"),
    (",x,y", None, "TestSetSelectorParser"),
    ("x nott in (y)", None, "TestSetSelectorParser"),
    ("x notin ( )", [("x", "NotIn", ("",))], "TestSetSelectorParser"),
    ("x notin (, a)", [("x", "NotIn", ("", "a"))], "TestSetSelectorParser"),
    ("a in (xyz),", None, "TestSetSelectorParser"),
    ("a in (xyz)b notin ()", None, "TestSetSelectorParser"),
    ("a ", [("a", "Exists", ())], "TestSetSelectorParser"),
    ("a in (x,y,notin, z,in)", [("a", "In", ("in", "notin", "x", "y", "z"))], "TestSetSelectorParser"),
    ("a in (xyz abc)", None, "TestSetSelectorParser"),
    ("a notin(", None, "TestSetSelectorParser"),
    ("a (", None, "TestSetSelectorParser"),
    ("(", None, "TestSetSelectorParser"),
    ("a" * 63, [("a" * 63, "Exists", ())], "outpost"),
    ("a" * 64, None, "outpost"),
    ("p/" + "a" * 63, [("p/" + "a" * 63, "Exists", ())], "outpost"),
    ("p/" + "a" * 64, None, "outpost"),
    ("b" * 253 + "/k", [("b" * 253 + "/k", "Exists", ())], "outpost"),
    ("b" * 254 + "/k", None, "outpost"),
    (("a" * 63 + ".") * 3 + "a" * 61 + "/k", [(("a" * 63 + ".") * 3 + "a" * 61 + "/k", "Exists", ())], "outpost"),
    ("Example.com/k", None, "outpost"),
    ("example.com/K", [("example.com/K", "Exists", ())], "outpost"),
    ("/k", None, "outpost"),
    ("k/", None, "outpost"),
    ("a/b/c", None, "outpost"),
    ("-a", None, "outpost"),
    ("a-", None, "outpost"),
    ("_a", None, "outpost"),
    ("a.b_c-d", [("a.b_c-d", "Exists", ())], "outpost"),
    ("k=" + "v" * 63, [("k", "In", ("v" * 63,))], "outpost"),
    ("k=" + "v" * 64, None, "outpost"),
    ("k=-v", None, "outpost"),
    ("k=v-", None, "outpost"),
    ("k=v_v", [("k", "In", ("v_v",))], "outpost"),
    ("k in (vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv)", None, "outpost"),
    (" k = v ", [("k", "In", ("v",))], "outpost"),
    ("\tk\t==\tv\t", [("k", "In", ("v",))], "outpost"),
    ("k\n!=\nv", [("k", "NotIn", ("v",))], "outpost"),
    ("k in(a)", [("k", "In", ("a",))], "outpost"),
    ("k notin(a)", [("k", "NotIn", ("a",))], "outpost"),
    ("k in ( a , b )", [("k", "In", ("a", "b"))], "outpost"),
    ("k=a b", None, "outpost"),
    ("k==", [("k", "In", ("",))], "outpost"),
    ("k!=", [("k", "NotIn", ("",))], "outpost"),
    ("k in (a)(", None, "outpost"),
    ("k in ((a))", None, "outpost"),
    ("k in (a)),", None, "outpost"),
    ("k,", None, "outpost"),
    (",", None, "outpost"),
    ("!", None, "outpost"),
    ("!k", [("k", "DoesNotExist", ())], "outpost"),
    ("! k", [("k", "DoesNotExist", ())], "outpost"),
    ("!!k", None, "outpost"),
    ("k!", None, "outpost"),
    ("=v", None, "outpost"),
    ("k=v=", None, "outpost"),
    ("k===v", None, "outpost"),
    ("k=!v", None, "outpost"),
    ("k>", None, "outpost"),
    ("k<", None, "outpost"),
    ("k>-1", None, "outpost"),
    ("k>+1", None, "outpost"),
    ("k>1.5", None, "outpost"),
    ("k>9223372036854775807", [("k", "Gt", ("9223372036854775807",))], "outpost"),
    ("k>9223372036854775808", None, "outpost"),
    ("k>=1", None, "outpost"),
    ("k<=1", None, "outpost"),
    ("k><1", None, "outpost"),
    ("in", [("in", "Exists", ())], "outpost"),
    ("notin", [("notin", "Exists", ())], "outpost"),
    ("in=in", [("in", "In", ("in",))], "outpost"),
    ("notin notin (notin)", [("notin", "NotIn", ("notin",))], "outpost"),
    ("k in in", None, "outpost"),
    ("k in (in", None, "outpost"),
    ("K=V", [("K", "In", ("V",))], "outpost"),
    ("k=é", None, "outpost"),
    ("é=v", None, "outpost"),
    ("k=v\xa0", None, "outpost"),
    ("k=v\n", [("k", "In", ("v",))], "outpost"),
    ("k\x00=v", [("k", "In", ("v",))], "outpost"),
    ("k=v,\x00garbage", [("garbage", "Exists", ()), ("k", "In", ("v",))], "outpost"),
    ("a=b,,c", None, "outpost"),
    ("app in (web", None, "outpost"),
    ("app in web)", None, "outpost"),
    ("=web", None, "outpost"),
    ("x,  y", [("x", "Exists", ()), ("y", "Exists", ())], "outpost"),
    ("x , y", [("x", "Exists", ()), ("y", "Exists", ())], "outpost"),
]

MATCHES: list[tuple[str, dict[str, str], bool | None, str]] = [
    # (selector, labels, upstream's Matches (None: the selector does not parse), source)
    ("", {"x": "y"}, True, "TestSelectorMatches"),
    ("x=y", {"x": "y"}, True, "TestSelectorMatches"),
    ("x=y,z=w", {"x": "y", "z": "w"}, True, "TestSelectorMatches"),
    ("x!=y,z!=w", {"x": "z", "z": "a"}, True, "TestSelectorMatches"),
    ("notin=in", {"notin": "in"}, True, "TestSelectorMatches"),
    ("x", {"x": "z"}, True, "TestSelectorMatches"),
    ("!x", {"y": "z"}, True, "TestSelectorMatches"),
    ("x>1", {"x": "2"}, True, "TestSelectorMatches"),
    ("x<1", {"x": "0"}, True, "TestSelectorMatches"),
    ("x=z", {}, False, "TestSelectorMatches"),
    ("x=y", {"x": "z"}, False, "TestSelectorMatches"),
    ("x=y,z=w", {"x": "w", "z": "w"}, False, "TestSelectorMatches"),
    ("x!=y,z!=w", {"x": "z", "z": "w"}, False, "TestSelectorMatches"),
    ("x", {"y": "z"}, False, "TestSelectorMatches"),
    ("!x", {"x": "z"}, False, "TestSelectorMatches"),
    ("x>1", {"x": "0"}, False, "TestSelectorMatches"),
    ("x<1", {"x": "2"}, False, "TestSelectorMatches"),
    ("foo=bar", {"foo": "bar", "baz": "blah"}, True, "TestSelectorMatches"),
    ("baz=blah", {"foo": "bar", "baz": "blah"}, True, "TestSelectorMatches"),
    ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True, "TestSelectorMatches"),
    ("foo=blah", {"foo": "bar", "baz": "blah"}, False, "TestSelectorMatches"),
    ("baz=bar", {"foo": "bar", "baz": "blah"}, False, "TestSelectorMatches"),
    ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False, "TestSelectorMatches"),
    ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True, "TestRequirementSelectorMatching"),
    ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False, "TestRequirementSelectorMatching"),
    ("x notin (),y", {"y": ""}, True, "TestRequirementSelectorMatching"),
    ("!x,y", {"y": ""}, True, "TestRequirementSelectorMatching"),
    ("x notin (),!y", {"y": ""}, False, "TestRequirementSelectorMatching"),
    ("x in ()", {"y": "baz"}, False, "TestRequirementSelectorMatching"),
    ("z>1", {"z": "2"}, True, "TestRequirementSelectorMatching"),
    ("z>1", {"z": "v2"}, False, "TestRequirementSelectorMatching"),
    ("x,y in (a)", {"x": "1", "y": "a"}, True, "TestSetSelectorParser"),
    ("x in (abc,)", {"x": ""}, True, "TestSetSelectorParser"),
    ("k>1", {"k": "+2"}, True, "outpost"),
    ("k>1", {"k": " 2"}, False, "outpost"),
    ("k>1", {"k": "2.0"}, False, "outpost"),
    ("k>1", {"k": "9223372036854775808"}, False, "outpost"),
    ("k<0", {"k": "-9223372036854775808"}, True, "outpost"),
    ("k>-1", {"k": "0"}, None, "outpost"),
    ("k>1", {}, False, "outpost"),
    ("k<1", {"k": ""}, False, "outpost"),
    ("k>01", {"k": "2"}, True, "outpost"),
    ("k=", {"k": ""}, True, "outpost"),
    ("k=", {}, False, "outpost"),
    ("k!=", {}, True, "outpost"),
    ("k!=", {"k": ""}, False, "outpost"),
    ("k in (,a)", {"k": ""}, True, "outpost"),
    ("k notin (,a)", {"k": "b"}, True, "outpost"),
    ("k notin (,a)", {"k": ""}, False, "outpost"),
    ("k", {"k": ""}, True, "outpost"),
    ("!k", {"k": ""}, False, "outpost"),
]

REQUIREMENTS: list[tuple[str, str, tuple[str, ...], bool, str]] = [
    # (key, upstream selection.Operator, values, upstream NewRequirement accepted it, source)
    ("x1", "in", (), False, "TestRequirementConstructor"),
    ("x2", "notin", (), False, "TestRequirementConstructor"),
    ("x3", "in", ("foo",), True, "TestRequirementConstructor"),
    ("x4", "notin", ("foo",), True, "TestRequirementConstructor"),
    ("x5", "=", ("bar", "foo"), False, "TestRequirementConstructor"),
    ("x6", "exists", (), True, "TestRequirementConstructor"),
    ("x7", "!", (), True, "TestRequirementConstructor"),
    ("x8", "exists", ("foo",), False, "TestRequirementConstructor"),
    ("x9", "in", ("bar",), True, "TestRequirementConstructor"),
    ("x10", "in", ("bar",), True, "TestRequirementConstructor"),
    ("x11", "gt", ("1",), True, "TestRequirementConstructor"),
    ("x12", "lt", ("6",), True, "TestRequirementConstructor"),
    ("x13", "gt", (), False, "TestRequirementConstructor"),
    ("x14", "gt", ("bar",), False, "TestRequirementConstructor"),
    ("x15", "lt", ("bar",), False, "TestRequirementConstructor"),
    ("a" * 254, "exists", (), False, "TestRequirementConstructor"),
    ("x16", "=", ("a" * 254,), False, "TestRequirementConstructor"),
    ("x17", "=", ("a b",), False, "TestRequirementConstructor"),
    ("x18", "unsupportedOp", (), False, "TestRequirementConstructor"),
    ("x", "gt", ("1", "2"), False, "outpost"),
    ("x", "gt", ("9223372036854775808",), False, "outpost"),
    ("x", "lt", ("-9223372036854775808",), False, "outpost"),
    ("x", "in", ("a", ""), True, "outpost"),
    ("x", "notin", ("",), True, "outpost"),
    ("x", "!", ("a",), False, "outpost"),
    ("x\n", "exists", (), False, "outpost"),
    ("x", "in", ("a\n",), False, "outpost"),
    ("x", "gt", (" 1",), False, "outpost"),
    ("x", "gt", ("+1",), False, "outpost"),
]

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
def test_parse_as_upstream(text: str, expected: list[tuple[str, str, tuple[str, ...]]] | None, source: str) -> None:
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
LEXER = [
    ("", "EndOfString"),
    (",", "Comma"),
    ("notin", "NotIn"),
    ("in", "In"),
    ("=", "Equals"),
    ("==", "DoubleEquals"),
    (">", "GreaterThan"),
    ("<", "LessThan"),
    ("!", "DoesNotExist"),
    ("!=", "NotEquals"),
    ("(", "OpenPar"),
    (")", "ClosedPar"),
    ("~", "Identifier"),
    ("||", "Identifier"),
]


@pytest.mark.parametrize(("text", "token"), LEXER)
def test_lexer_as_upstream(text: str, token: str) -> None:
    first = lex(text)[0]
    assert first[0] == token, f"{UPSTREAM} TestLexer"
    assert first[1] == text


# TestLexerSequence and TestParserLookahead (which adds the final EndOfString).
SEQUENCES = [
    ("key in ( value )", ["Identifier", "In", "OpenPar", "Identifier", "ClosedPar"]),
    ("key notin ( value )", ["Identifier", "NotIn", "OpenPar", "Identifier", "ClosedPar"]),
    ("key in ( value1, value2 )", ["Identifier", "In", "OpenPar", "Identifier", "Comma", "Identifier", "ClosedPar"]),
    ("key", ["Identifier"]),
    ("!key", ["DoesNotExist", "Identifier"]),
    ("()", ["OpenPar", "ClosedPar"]),
    ("", []),
    ("x in (),y", ["Identifier", "In", "OpenPar", "ClosedPar", "Comma", "Identifier"]),
    ("== != (), = notin", ["DoubleEquals", "NotEquals", "OpenPar", "ClosedPar", "Comma", "Equals", "NotIn"]),
    ("key>2", ["Identifier", "GreaterThan", "Identifier"]),
    ("key<1", ["Identifier", "LessThan", "Identifier"]),
]


@pytest.mark.parametrize(("text", "tokens"), SEQUENCES)
def test_lexer_sequence_as_upstream(text: str, tokens: list[str]) -> None:
    assert [token for token, _ in lex(text)] == [*tokens, "EndOfString"], f"{UPSTREAM} TestLexerSequence"


# TestToString: upstream's rendering of each selector reads back (here) as the same requirements, and what
# outpost renders means the same (its text differs only by `x in (a)` -> `x=a` and `==` -> `=`).
TO_STRING = [
    ("x in (abc,def),y notin (jkl),z", [("x", "In", ("abc", "def")), ("y", "NotIn", ("jkl",)), ("z", "Exists", ())]),
    (
        "x notin (abc,def),y!=jkl,!z",
        [("x", "NotIn", ("abc", "def")), ("y", "NotIn", ("jkl",)), ("z", "DoesNotExist", ())],
    ),
    (
        "x notin (abc),y in (jkl,mno),z notin ()",
        [("x", "NotIn", ("abc",)), ("y", "In", ("jkl", "mno")), ("z", "NotIn", ("",))],
    ),
    (
        "x=abc,y==jkl,z!=a,z",
        [("x", "In", ("abc",)), ("y", "In", ("jkl",)), ("z", "Exists", ()), ("z", "NotIn", ("a",))],
    ),
    ("x>2,y<8,z", [("x", "Gt", ("2",)), ("y", "Lt", ("8",)), ("z", "Exists", ())]),
]


@pytest.mark.parametrize(("text", "requirements"), TO_STRING)
def test_to_string_as_upstream(text: str, requirements: list[tuple[str, str, tuple[str, ...]]]) -> None:
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
