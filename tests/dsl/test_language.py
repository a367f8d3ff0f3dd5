"""The rule language itself: parsing (precedence, positions), checking, and compiled evaluation.

Expressions are checked against a small catalogue of their own (the builtin helpers plus an `Item` entity and a
few roots), compiled with `rulepass.dsl.compile` and evaluated on plain Python values, so these tests pin the
language's semantics independently of the GE domain.
"""

from __future__ import annotations

import ast as pyast
import builtins
import contextlib
import io
import json
import keyword
import re
import tokenize
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from rulepass.dsl import ast, codegen
from rulepass.dsl.builtins import builtin_catalogue
from rulepass.dsl.catalogue import Catalogue
from rulepass.dsl.check import check_rule
from rulepass.dsl.codegen import generate_expr
from rulepass.dsl.compile import CompiledRule, Env, EvalError
from rulepass.dsl.load import compile_rule
from rulepass.dsl.parse import parse_action, parse_expr
from rulepass.dsl.rules import Rule, read_rule_text

from rulepass.base.diagnostics import Diagnostic, RulepassError

CALLS: list[int] = []


def _probe(x: int) -> int:
    CALLS.append(x)
    return x


def _catalogue() -> Catalogue:
    cat = builtin_catalogue()
    cat.add_entity(
        "Item",
        "A test entity.",
        [
            ("name", "str", "Its name.", lambda o: o["name"]),
            ("size", "int", "Its size.", lambda o: o["size"]),
            ("next", "Item?", "The next item, or null.", lambda o: o.get("next")),
            ("tags", "list[str]", "Its tags.", lambda o: o.get("tags", [])),
        ],
        set_attr=lambda o, k, v: o.__setitem__(k, v),
    )
    cat.add_entity("Pair", "Not an attribute holder.", [("left", "Item", "The left item.", lambda o: o["left"])])
    cat.add_helper("probe", "x: int", "int", "Counts its calls.", _probe)
    cat.add_helper("add", "a: int, b: int", "int", "a + b.", lambda a, b: a + b)
    cat.add_helper("twice", "x: int", "int", "2x.", lambda x: 2 * x)
    cat.add_root("n", "int", "A number.")
    cat.add_root("xs", "list[int]", "Numbers.")
    cat.add_root("s", "str", "A string.")
    cat.add_root("item", "Item", "An item.")
    cat.add_root("maybe", "Item?", "An item or null.")
    cat.add_root("items", "list[Item]", "Items.")
    cat.add_root("pair", "Pair", "A pair.")
    return cat


CAT = _catalogue()
ITEM_B = {"name": "b", "size": 2, "tags": []}
ITEM_A = {"name": "a", "size": 1, "next": ITEM_B, "tags": ["x", "y"]}
ROOTS: dict[str, Any] = {
    "n": 5,
    "xs": [3, 1, 4, 1, 5, 9, 2, 6],
    "s": "concat_lxslice_0",
    "item": ITEM_A,
    "maybe": None,
    "items": [ITEM_A, ITEM_B],
    "pair": {"left": ITEM_A},
}


def rule_text(
    value: str, lets: dict[str, str] | None = None, require: str = "true", actions: tuple[str, ...] = ()
) -> str:
    """A one-rule file: rule-level `lets`, then `v: value` last, one check, optional actions."""
    body = "".join(f"      {k}: {json.dumps(e)}\n" for k, e in {**(lets or {}), "v": value}.items())
    acts = "    actions:\n" + "".join(f"      - {json.dumps(a)}\n" for a in actions) if actions else ""
    return (
        "rules:\n  - name: T\n    match: [X]\n    let:\n" + body
        + f"    checks:\n      - name: C\n        require: {json.dumps(require)}\n" + acts
    )  # fmt: skip


def checked(text: str) -> tuple[Rule, CompiledRule | None, list[Diagnostic]]:
    model, diags = read_rule_text(text, "t.yaml")
    if model is None:
        raise RulepassError(diags)
    rule = model.rules[0]
    res, diags = check_rule(rule, CAT)
    errors = [d for d in diags if d.severity == "error"]
    return rule, (None if errors else compile_rule(rule, res, step_limit=LIMIT)), diags


LIMIT = 100_000


def errors_of(value: str, lets: dict[str, str] | None = None) -> list[str]:
    """The error messages of the checker for `value`."""
    _, _, diags = checked(rule_text(value, lets))
    return [d.message for d in diags if d.severity == "error"]


def ev(value: str, lets: dict[str, str] | None = None, limit: int = LIMIT, **vars: Any) -> Any:
    """Check, compile and evaluate `value`; checker errors fail the test.

    Evaluates with the closures and with the generated code (dsl/codegen.py) and insists they agree: the same
    value, or a fault in the generated code exactly where the closures raise an EvalError.
    """
    rule, compiled, diags = checked(rule_text(value, lets))
    assert compiled is not None, [d.headline() for d in diags]
    assert compiled.fast is not None  # the rule's generated function (made on first use) compiles too
    node = rule.lets[-1].expr.node
    fn = compiled.fns[id(node)]
    gen = generate_expr(node, compiled.res, limit)
    assert gen is not None
    try:
        want = fn(Env({**ROOTS, **vars}, limit))
    except EvalError:
        with pytest.raises(Exception):  # noqa: B017 - the generated code reports where, not what
            gen({**ROOTS, **vars}, 0)
        raise
    got = gen({**ROOTS, **vars}, 0)
    assert got == want and type(got) is type(want), (value, got, want)
    return want


# ---- parsing -------------------------------------------------------------------------------------------------


def test_precedence_in_the_tree() -> None:
    e = parse_expr("a or b and not c == d + e * -f")
    assert isinstance(e, ast.BoolOp) and e.op == "or"
    right = e.operands[1]
    assert isinstance(right, ast.BoolOp) and right.op == "and"
    neg = right.operands[1]
    assert isinstance(neg, ast.Unary) and neg.op == "not"
    cmp = neg.operand
    assert isinstance(cmp, ast.Compare) and cmp.op == "=="
    plus = cmp.right
    assert isinstance(plus, ast.Arith) and plus.op == "+"
    times = plus.right
    assert isinstance(times, ast.Arith) and times.op == "*"
    assert isinstance(times.right, ast.Unary) and times.right.op == "-"


def test_node_positions() -> None:
    text = "len(xs)  >  2"
    e = parse_expr(text)
    assert isinstance(e, ast.Compare)
    assert text[e.start : e.end] == text
    assert text[e.left.start : e.left.end] == "len(xs)"
    p = parse_expr("  (a + b)  ")
    assert (p.start, p.end) == (2, 9)


def test_method_call_is_a_call_with_a_receiver() -> None:
    e = parse_expr("x.f(a, 1)")
    assert isinstance(e, ast.Call)
    assert e.func == "f" and isinstance(e.receiver, ast.Name) and e.receiver.id == "x" and len(e.args) == 2
    assert ev("n.twice()") == ev("twice(n)") == 10
    assert ev("n.add(3)") == ev("add(n, 3)") == 8
    assert ev("xs.index_of(4)") == ev("index_of(xs, 4)") == 2
    assert ev("xs.len().twice()") == 16


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 < 2 < 3", "unexpected '<' in expression"),  # comparisons do not chain
        ("xs[1:2:3]", "unexpected ':' in expression; expected ']'"),
        ("f(", "expression ends too early"),
        ("1 +", "expression ends too early; expected an expression"),
        ("a && b", "unexpected character '&' in expression"),
        ("if a then b", "expression ends too early"),
        ("all(x xs: x)", "unexpected 'xs' in expression"),
        ("", "expression is empty"),
    ],
)
def test_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(RulepassError) as exc:
        parse_expr(text)
    (d,) = exc.value.diagnostics
    assert d.code == "expr-syntax"
    assert d.message.startswith(message)


def test_actions_parse() -> None:
    a = parse_action("for i in items where i.size > 1: set i.big = true")
    assert isinstance(a, ast.ForAction) and a.var == "i" and a.where is not None
    assert isinstance(a.body, ast.SetAction) and a.body.attr == "big"
    b = parse_action('set item["odd-name"] = 1')
    assert isinstance(b, ast.SetAction) and b.attr == "odd-name"
    with pytest.raises(RulepassError) as exc:
        parse_action("set item = 1")
    assert exc.value.diagnostics[0].code == "action-target"


# ---- evaluation ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 3 - 2", 5),
        ("2 * 3 % 4", 2),
        ("7 // 2", 3),
        ("7 / 2", 3.5),
        ("-2 * 3", -6),
        ("- -2", 2),
        ("0x1f + 1", 32),
        ("1.5e1", 15.0),
        ("not true or true", True),
        ("true or false and false", True),
        ("not 1 in [1, 2]", False),
        ("1 + 1 == 2 and 2 > 1", True),
        ("if n > 3 then 'big' else 'small'", "big"),
        ("if false then 1 else 2 + 10", 12),
        ("if false then 1 else if true then 2 else 3", 2),
        ("(if n > 3 then 1 else 2) + 1", 2),
        ("'a' + \"b\"", "ab"),
        ("'it\\'s'", "it's"),
        ("[1, 2] + [3]", [1, 2, 3]),
        ("null == null", True),
        ("maybe == null", True),
        ("item.next.name", "b"),
        ("items[1].size", 2),
    ],
)
def test_values(text: str, value: Any) -> None:
    got = ev(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("xs[1:3]", [1, 4]),
        ("xs[:2]", [3, 1]),
        ("xs[6:]", [2, 6]),
        ("xs[:]", [3, 1, 4, 1, 5, 9, 2, 6]),
        ("xs[5:2]", []),
        ("xs[6:100]", [2, 6]),
        ("s[0:6]", "concat"),
        ("s[7:]", "lxslice_0"),
        ("xs[n:]", [9, 2, 6]),
        ("xs[len(xs) - 1]", 6),
    ],
)
def test_slices_and_indexing(text: str, value: Any) -> None:
    assert ev(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4 in xs", True),
        ("7 in xs", False),
        ("7 not in xs", True),
        ("'lx' in s", True),
        ("'zz' not in s", True),
        ("'x' in item.tags", True),
        ("item in items", True),
        ("maybe in items", False),
        ("n in [1, 5]", True),
    ],
)
def test_membership(text: str, value: bool) -> None:
    assert ev(text) is value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("all(x in xs: x > 0)", True),
        ("all(x in xs where x > 4: x > 4)", True),
        ("all(x in xs where x > 4: x > 5)", False),
        ("any(x in xs: x == 9)", True),
        ("any(x in xs where x < 3: x > 3)", False),
        ("none(x in xs: x > 9)", True),
        ("all(x in []: false)", True),
        ("any(x in []: true)", False),
        ("count(x in xs: x > 3)", 4),
        ("count(x in xs where x % 2 == 0: x > 3)", 2),
        ("distinct(x in xs: x)", 7),
        ("distinct(x in xs: x % 3)", 3),
        ("distinct(i in items: i.tags)", 2),
        ("count(i in items where i.next != null: i.next.size == 2)", 1),
        ("all(x in xs: any(y in xs: y >= x))", True),
        ("count(x in range(4): true)", 4),
        ("count(x in range(0): true)", 0),
        ("count(x in range(1): true)", 1),
        ("all(x in range(1): false)", False),
        ("count(x in range(0 - 3): true)", 0),
        ("all(x in range(0 - 1): false)", True),
        ("any(x in range(len(xs) - len(xs)): true)", False),
        ("count(x in range(len(xs)): x < len(xs))", 8),
    ],
)
def test_quantifiers(text: str, value: Any) -> None:
    assert ev(text) == value


def test_quantifier_variable_does_not_leak() -> None:
    rule, compiled, _ = checked(rule_text("count(x in xs: x > 3)"))
    assert compiled is not None
    env = Env(dict(ROOTS), LIMIT)
    compiled.fns[id(rule.lets[-1].expr.node)](env)
    assert "x" not in env.vars


def test_lazy_let_is_evaluated_at_most_once() -> None:
    CALLS.clear()
    assert ev("p + p + p", {"p": "probe(n)"}) == 15
    assert CALLS == [5, 5]  # once by the closures, once by the generated code
    CALLS.clear()
    assert ev("false and p > 0", {"p": "probe(n)"}) is False
    assert CALLS == []
    CALLS.clear()
    assert ev("all(x in xs: p > 0)", {"p": "probe(n)"}) is True
    assert CALLS == [5, 5]
    CALLS.clear()
    assert ev("q * 2", {"p": "probe(n)", "q": "p + p"}) == 20
    assert CALLS == [5, 5]


# ---- runtime faults ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("maybe.name", "cannot read 'name' of null"),
        ("item.next.next.name", "cannot read 'name' of null"),
        ("xs[8]", "index 8 is out of range for a length of 8"),
        ("xs[0 - 1]", "index -1 is out of range"),
        ("n // 0", "division by zero"),
        ("n / 0", "division by zero"),
        ("n % 0", "division by zero"),
        ("xs[0 - 1:]", "negative slice bound -1"),
        ("all(x in maybe.tags: true)", "cannot read 'tags' of null"),
    ],
)
def test_runtime_faults_are_eval_errors(text: str, message: str) -> None:
    with pytest.raises(EvalError) as exc:
        ev(text)
    assert message in exc.value.message
    assert exc.value.node is not None


def test_step_limit_stops_runaway_evaluation() -> None:
    text = "count(a in range(1000): count(b in range(1000): count(c in range(1000): true) > 0) > 0)"
    with pytest.raises(EvalError) as exc:
        ev(text, limit=10_000)
    assert exc.value.message == "evaluation exceeded its budget of 10000 steps"
    assert ev("count(a in range(50): true)", limit=100) == 50
    assert ev("count(a in range(49): true)", limit=49) == 49  # a range is charged its length, as a list is
    with pytest.raises(EvalError, match="budget of 49 steps"):
        ev("count(a in range(50): true)", limit=49)


def test_actions_collect_effects() -> None:
    _, compiled, diags = checked(
        rule_text("1", actions=("set item.done = true", "for i in items where i.size > 1: set i.tags2 = ['z']"))
    )
    assert compiled is not None, diags
    env = Env(dict(ROOTS), LIMIT)
    effects: list[Any] = []
    for act in compiled.actions:
        act(env, effects)
    assert [(t["name"], k, v) for _, t, k, v in effects] == [("a", "done", True), ("b", "tags2", ["z"])]


# ---- the checker ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nn + 1", "unknown name 'nn'"),
        ("item.nam", "Item has no field 'nam'"),
        ("items.name", "`items` is list[Item]; lists have no field 'name'"),
        ("probe(1, 2)", "probe() takes 1 argument(s), 2 given"),
        ("probe('a')", "argument 'x' of probe() must be int, but `'a'` is str"),
        ("item == 1", "comparing Item with int is always false"),
        ("all(x in n: true)", "all() needs a list, but `n` is int"),
        ("all(x in xs: x)", "the body of all() must be bool, but `x` is int"),
        ("count(x in xs where x: true)", "the 'where' filter must be bool, but `x` is int"),
        ("not n", "the operand of 'not' must be bool, but `n` is int"),
        ("'a' < 1", "'<' compares numbers or strings, not str and int"),
        ("s + 1", "'+' needs numbers, not str and int"),
        ("xs['a']", "an index must be an int, but `'a'` is str"),
        ("n[0]", "`n` is int; only lists and strings can be indexed"),
        ("if n then 1 else 2", "the condition of 'if' must be bool, but `n` is int"),
        ("[1, 'a']", "list elements have different types (int and str)"),
        ("n.size", "`n` is int, which has no fields"),
        ("all(n in xs: true)", "'n' shadows a root binding of the same name"),
        ("all(len in xs: true)", "'len' shadows a helper of the same name"),
        ("all(x in xs: any(x in xs: true))", "'x' shadows another binding of the same name"),
        ("probe", "'probe' is a helper; call it as probe(...)"),
        ("item.name()", "'name' is a field of Item, not a helper"),
        ("__import__('os')", "unknown helper '__import__'"),
        ("item.__class__", "Item has no field '__class__'"),
    ],
)
def test_checker_errors(text: str, message: str) -> None:
    assert errors_of(text) == [message]


def test_checker_action_errors() -> None:
    _, _, diags = checked(rule_text("1", actions=("set pair.x = 1",)))
    assert [d.message for d in diags if d.severity == "error"] == ["cannot set attributes on `pair` (Pair)"]
    _, _, diags = checked(rule_text("1", actions=("set item.x = item",)))
    assert [d.message for d in diags if d.severity == "error"] == [
        "an attribute value must be bool, int, float, str or a list of those, not Item"
    ]


def test_the_empty_list_joins_any_list_and_keeps_its_element_type() -> None:
    # `[]` is a list[nothing]: beside a list[int] the whole is a list[int], so what is read from it is checked
    for whole in ("(if n > 1 then [] else [1, 2])", "(if n > 1 then [1, 2] else [])", "([] + [1])"):
        assert errors_of(f"{whole}[0] + 'x' == 'y'") == ["'+' needs numbers, not int and str"]
        assert errors_of(f"'a' in {whole}") == [f"`'a'` is str but `{whole}` holds int"]
    assert errors_of("(if n > 1 then [[]] else [[1]])[0][0] + 'x' == 'y'") == ["'+' needs numbers, not int and str"]
    assert errors_of("all(x in (if n > 1 then [] else [1]): x == 'a')") == ["comparing int with str is always false"]
    assert errors_of("(if n > 1 then [] else ['a']) == [1]") == ["comparing list[str] with list[int] is always false"]
    # alone, it stands wherever a list is expected, and what is read from it is not known
    assert errors_of("len([]) == 0 and [] == [1] and count(x in []: x > 1) == 0 and sum([]) == 0") == []
    assert errors_of("all(x in []: x.foo)") == ["cannot read field 'foo' of `x`: its type is not known"]
    assert ev("len(if n > 1 then [] else [1])", n=2) == 0 and ev("([] + [3])[0]") == 3
    _, compiled, _ = checked(rule_text("1", actions=("set item.x = []",)))
    assert compiled is not None  # an empty list is an attribute value


def test_unknown_names_do_not_cascade() -> None:
    assert errors_of("nn.size > 1 and nn.name == 'a'") == ["unknown name 'nn'", "unknown name 'nn'"]
    assert errors_of("all(x in n: x.size > 0)") == ["all() needs a list, but `n` is int"]
    assert errors_of("all(x in nn.items: x.size.foo > 0)") == ["unknown name 'nn'"]


def test_unused_and_early_bindings() -> None:
    _, _, diags = checked(rule_text("1", {"unused": "2", "_quiet": "3"}))
    assert [(d.severity, d.message) for d in diags] == [
        ("warning", "binding 'unused' is never used"),
        ("warning", "binding 'v' is never used"),
    ]
    text = rule_text("early + 1", {"early": "v + 1"})  # `early` uses `v`, declared after it
    _, _, diags = checked(text)
    assert [(d.severity, d.message) for d in diags] == [("error", "'v' is used before its binding")]


def test_no_user_text_reaches_eval_or_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    parse_expr("1")  # the parser is built once, before the guard
    catalogue_paths()  # as are the catalogues (their imports use eval: namedtuple, in networkx)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec called")

    sources: list[str] = []
    real_compile = builtins.compile

    def recorded(source: str | pyast.Module, *args: Any, **kwargs: Any) -> Any:
        sources.append(source if isinstance(source, str) else pyast.unparse(source))  # the generated code's tree
        return real_compile(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "compile", recorded)
    assert ev('\'__import__("os").system("true")\'') == '__import__("os").system("true")'
    assert ev("count(x in xs where x > 2: 'exec' in s) + len(s)") == 16
    # the generated code (the one use of compile/exec) holds none of the rule's text: no string literal, no
    # name but the templates' own
    assert len(sources) == 4  # per evaluation: the rule and the expression
    for src in sources:
        assert_template_only(src)
    assert errors_of("__import__('os').system('true')") == ["unknown helper '__import__'", "unknown helper 'system'"]
    assert errors_of("eval('1')") == ["unknown helper 'eval'"]


TEMPLATE_NAMES = {"_factory", "fast", "K", "R", "s", "_F", "_B", "_U", *codegen._BUILTINS}


def catalogue_templates() -> list[str]:
    """Every inline form the catalogues declare (domain code, not rule text)."""
    from rulepass.compiler.facts import ge_catalogue

    cats = (CAT, ge_catalogue())
    return [
        *(t for cat in cats for h in cat.helpers.values() for t in h.inline.values()),
        *(t for cat in cats for e in cat.entities.values() for f in e.fields.values() for t in (f.inline, f.view) if t),
        *(f.indexed.count for cat in cats for e in cat.entities.values() for f in e.fields.values() if f.indexed),
        *(t for cat in cats for e in cat.entities.values() for t in (e.attrs_inline, e.key_inline) if t),
    ]


def catalogue_paths() -> set[str]:
    """The attribute names of the fields the catalogues declare as paths, and of their inline forms."""
    from rulepass.compiler.facts import ge_catalogue

    inline_names = {name for template in catalogue_templates() for name in re.findall(r"\.([a-z_]+)", template)}
    return inline_names | {
        part
        for cat in (CAT, ge_catalogue())
        for e in cat.entities.values()
        for f in e.fields.values()
        if f.path
        for part in f.path.split(".")
    }


def assert_template_only(src: str) -> None:
    """Every token of generated source is the templates' own: generated names, indices, keywords, operators, and
    after a `.` an attribute path the catalogue declares."""
    paths = catalogue_paths()
    strings = {  # the string literals of the catalogue's inline forms (a rule's strings are passed in as data)
        tok.string
        for template in catalogue_templates()
        for tok in tokenize.generate_tokens(io.StringIO(template.replace("{", "(").replace("}", ")")).readline)
        if tok.type == tokenize.STRING
    }
    prev = None
    prev_name = ""
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NAME:
            if prev is not None and prev.type == tokenize.OP and prev.string == ".":
                assert (
                    tok.string in paths
                    or (tok.string == "get" and re.fullmatch(r"Mk\d+", prev_name))
                    or (tok.string == "append" and re.fullmatch(r"hv?\d+", prev_name))  # earlier()'s lists
                    or (tok.string == "add" and re.fullmatch(r"hv\d+", prev_name))  # and sets of keys
                ), tok
            else:
                ok = keyword.iskeyword(tok.string) or tok.string in TEMPLATE_NAMES
                assert ok or re.fullmatch(r"[tkmvrhcepj]\d+|Mk\d+|h[vf]\d+", tok.string), tok
        elif tok.type == tokenize.NUMBER:
            assert tok.string.isdigit(), tok
        else:
            assert tok.type != tokenize.ERRORTOKEN and (tok.type != tokenize.STRING or tok.string in strings), tok
        if tok.type == tokenize.NAME:
            prev_name = tok.string
        prev = tok


def test_generated_code_of_the_bundled_rules_is_template_only() -> None:
    from rulepass.api import load_rules

    rules = load_rules().rules
    assert all(r.fast is not None for r in rules)
    for r in rules:
        assert_template_only(r.fast.source)


def test_let_quantifier_reusing_an_enclosing_variable_name() -> None:
    assert ev("all(x in xs: w or x > 0)", {"w": "any(x in xs: x > 100)"}) is True


# ---- the generated code against the closures, on random expressions ------------------------------------------

_INT_ATOMS = ["n", "0", "1", "-2", "3", "len(xs)", "item.size", "xs[2]", "xs[n]", "twice(n)", "count(x in xs: x > 2)"]
_LIST_ATOMS = ["xs", "xs[1:4]", "xs[:n]", "[1, 2, n]", "items", "item.tags", "xs + [7]"]
_BOOL_ATOMS = ["true", "false", "maybe == null", "'x' in item.tags", "s == 'a'"]


def _int_expr() -> st.SearchStrategy[str]:
    return st.recursive(
        st.sampled_from(_INT_ATOMS),
        lambda e: st.one_of(
            st.tuples(e, st.sampled_from(["+", "-", "*", "//", "%"]), e).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(_bool_atom(), e, e).map(lambda t: f"(if {t[0]} then {t[1]} else {t[2]})"),
            e.map(lambda x: f"xs[{x}]"),
            e.map(lambda x: f"add({x}, n)"),
            e.map(lambda x: f"count(y in xs where y < {x}: y > 1)"),
        ),
        max_leaves=6,
    )


def _bool_atom() -> st.SearchStrategy[str]:
    return st.sampled_from(_BOOL_ATOMS)


def _bool_expr() -> st.SearchStrategy[str]:
    ints = _int_expr()
    cmp = st.tuples(ints, st.sampled_from(["<", "<=", "==", "!=", ">", ">="]), ints).map(lambda t: " ".join(t))
    leaf = st.one_of(
        _bool_atom(), cmp, st.tuples(ints, st.sampled_from(_LIST_ATOMS[:4])).map(lambda t: f"{t[0]} in {t[1]}")
    )
    return st.recursive(
        leaf,
        lambda e: st.one_of(
            st.tuples(e, st.sampled_from(["and", "or"]), e).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            e.map(lambda x: f"(not {x})"),
            st.tuples(st.sampled_from(["all", "any", "none"]), e).map(
                lambda t: f"{t[0]}(z in xs where z != n: {t[1]} or z > 3)"
            ),
            e.map(lambda x: f"any(it in items: it.size > 1 and {x})"),
        ),
        max_leaves=5,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_int_expr(), _bool_expr()), st.integers(-3, 9))
def test_generated_code_agrees_with_the_closures_on_random_expressions(text: str, n: int) -> None:
    """Same value, or a fault exactly where the closures raise an EvalError (ev checks both)."""
    _, compiled, _ = checked(rule_text(text))
    assume(compiled is not None)
    with contextlib.suppress(EvalError):
        ev(text, n=n)


@pytest.mark.parametrize(
    "template",
    ["{0}.op.attrs.get({1}) is True", "{1} in {0}.attrs", "not {0}.op.subgraph_names", "len({0}) > 0 and min({0}) < 0"],
)
def test_inline_forms_of_attribute_names_and_operators_are_accepted(template: str) -> None:
    cat = Catalogue()
    cat.add_helper("h", "x: any, y: any", "bool", "A helper.", lambda x, y: True, inline={"Node/2": template})


@pytest.mark.parametrize(
    "template",
    [
        "__import__('os').system({0})",
        "{0}.__class__",
        "eval({0})",
        "{0}.attrs.get(x)",
        "{0} + 1.5",
        "{0} + 0x1f",
        "{0} if X else {1}",
        "{0} == f'x'",
        "{0} == b'x'",
    ],
)
def test_inline_forms_with_anything_else_are_refused(template: str) -> None:
    cat = Catalogue()
    with pytest.raises(ValueError, match="may not contain"):
        cat.add_helper("h", "x: any, y: any", "bool", "A helper.", lambda x, y: True, inline={"Node/2": template})


@pytest.mark.parametrize("key", ["Node", "Node/x", "/2", "Node/2/maybe", "Node/2/True", "Node/2/true/false"])
def test_an_inline_key_names_a_type_a_count_and_at_most_a_bool_literal(key: str) -> None:
    cat = Catalogue()
    cat.add_helper("ok", "x: any, y: bool", "bool", "A helper.", lambda x, y: y, inline={"Node/2/true": "{1}"})
    with pytest.raises(ValueError, match="is not '<type>/<argument count>"):
        cat.add_helper("h", "x: any, y: bool", "bool", "A helper.", lambda x, y: y, inline={key: "{1}"})


def test_a_helpers_inline_form_may_call_the_helper_and_a_fields_may_not() -> None:
    cat = Catalogue()
    cat.add_helper("g", "x: any", "bool", "A helper.", bool, inline={"Node/1": "{0}.name == 'x' or {0}.name == \"y\""})
    cat.add_helper("h", "x: any", "int", "A helper.", len, inline={"Node/1": "0 if {0} is None else {f}({0})"})
    with pytest.raises(ValueError, match="malformed"):
        cat.add_entity("E", "An entity.", [("n", "int", "A number.", len, "{f}({0})")])


def test_the_catalogue_derives_which_fields_are_lengths_and_null_tests_of_others() -> None:
    """An int field whose inline form is `len(...)` of a never-null list field's form is that list's length; a
    bool field whose form is a nullable field's form followed by `is not None` is that field's null test.
    Anything else derives nothing (generated code then reads each field by its own form)."""
    cat = Catalogue()
    cat.add_entity(
        "E",
        "An entity.",
        [
            ("xs", "list[int]", "Items.", list, "list({0}.xs)", "{0}.xs"),
            ("maybe", "list[int]?", "Items or null.", list, "{0}.maybe"),
            ("n", "int", "Count.", len, "len({0}.xs)"),
            ("m", "int", "Count of the nullable.", len, "len({0}.maybe)"),
            ("k", "int", "Not a length.", len, "len({0}.xs) + 1"),
            ("peer", "E?", "Another.", lambda o: o, "{0}.peer"),
            ("linked", "bool", "Has one.", bool, "{0}.peer is not None"),
            ("other", "bool", "Something else.", bool, "{0}.xs is not None"),
        ],
    )
    fields = cat.entities["E"].fields
    assert fields["n"].length_of == "{0}.xs"
    assert fields["m"].length_of is None and fields["k"].length_of is None  # nullable; not a plain length
    assert fields["linked"].not_null_of is fields["peer"]
    assert fields["other"].not_null_of is None  # `xs` is never null


def test_a_field_view_is_checked_like_an_inline_form_and_only_lists_of_scalars_or_entities_have_one() -> None:
    cat = Catalogue()
    with pytest.raises(ValueError, match="may not contain"):
        cat.add_entity("E", "An entity.", [("xs", "list[int]", "Items.", list, "list({0}.xs)", "eval({0})")])
    with pytest.raises(ValueError, match="only a list of scalars or entities has a view"):
        cat.add_entity("E", "An entity.", [("n", "int", "A number.", len, "len({0}.xs)", "{0}.xs")])
    with pytest.raises(ValueError, match="only a list of scalars or entities has a view"):
        cat.add_entity("E", "An entity.", [("xss", "list[list[int]]", "Rows.", list, "list({0}.x)", "{0}.x")])
    # the getter `{f}` may stand in a view (where there is no stored sequence), not in an inline form
    with pytest.raises(ValueError, match=r"inline form '\{f\}\(\{0\}\)' is malformed"):
        cat.add_entity("E", "An entity.", [("xs", "list[int]", "Items.", list, "{f}({0})")])
    cat.add_entity("E", "An entity.", [("xs", "list[int]", "Items.", list, "list({0}.xs)", "{0}.xs")])
    assert cat.entities["E"].fields["xs"].view == "{0}.xs"
    view = "{0}.parts[0] if len({0}.parts) == 1 else {f}({0})"
    cat.add_entity("Box", "A box.", [("items", "list[E]", "Its items.", list, None, view)])
    assert cat.entities["Box"].fields["items"].view == view


def test_an_indexed_field_must_be_a_list_field_with_a_well_formed_count() -> None:
    from rulepass.dsl.catalogue import IndexedList

    form = IndexedList("len({0}.xs)", lambda o, k: (o, k), ("owner", "index"))
    fields: list[Any] = [("xs", "list[int]", "Items.", list, "list({0}.xs)"), ("n", "int", "A number.", len)]
    with pytest.raises(ValueError, match="indexed field 'n' is not one of its list fields"):
        Catalogue().add_entity("E", "An entity.", fields, indexed={"n": form})
    with pytest.raises(ValueError, match="may not contain"):
        Catalogue().add_entity(
            "E", "An entity.", fields, indexed={"xs": IndexedList("eval({0})", form.make, form.parts)}
        )
    cat = Catalogue()
    cat.add_entity("E", "An entity.", fields, indexed={"xs": form})
    assert cat.entities["E"].fields["xs"].indexed is form
    # the element type's parts must be attribute paths of those names (checked once both are registered)
    cat = Catalogue()
    items = [("items", "list[Item]", "Items.", "items")]
    cat.add_entity("Box", "A box.", items, indexed={"items": form})
    with pytest.raises(ValueError, match=r"indexed elements need 'Item\.index' as the path 'index'"):
        cat.add_entity("Item", "An item.", [("owner", "Box", "Its box.", "owner"), ("index", "int", "Where.", len)])
    cat = Catalogue()
    cat.add_entity("Item", "An item.", [("owner", "any", "Its box.", "owner"), ("index", "int", "Where.", "index")])
    cat.add_entity("Box", "A box.", items, indexed={"items": form})


# ---- earlier(x) ----------------------------------------------------------------------------------------------
def _group_rule(check: str, lets: str = "          size: it.size\n", where: str = "true", rule_let: str = "1") -> str:
    return (
        "rules:\n  - name: T\n    match: [X]\n    let:\n"
        f"      top: {json.dumps(rule_let)}\n"
        "    checks:\n      - name: G\n        for_each: it in items\n"
        f"        where: {json.dumps(where)}\n        let:\n{lets}"
        f"        checks:\n          - name: C\n            require: {json.dumps(check)}\n"
    )  # fmt: skip


NEITHER = "earlier() needs a for_each variable or a `let` of a for_each group; '{}' is neither"
ONE_NAME = "earlier() takes one name: a for_each variable or a `let` of its group"


@pytest.mark.parametrize(
    ("check", "kwargs", "message"),
    [
        ("len(earlier()) >= 0", {}, ONE_NAME),
        ("len(earlier(it.size)) >= 0", {}, ONE_NAME),
        ("len(earlier(top)) >= 0", {}, NEITHER.format("top")),
        ("len(earlier(n)) >= 0", {}, NEITHER.format("n")),
        ("all(x in xs: len(earlier(x)) >= 0)", {}, NEITHER.format("x")),
        ("len(earlier(nope)) >= 0", {}, "unknown name 'nope'"),
        (
            "size > 0",
            {"where": "len(earlier(it)) < 3"},
            "earlier(it) cannot be used in the 'where' filter of its own for_each",
        ),
        ("len(earlier(prev)) >= 0", {"lets": "          size: it.size\n          prev: len(earlier(size))\n"},
         "earlier(prev): 'prev' itself needs earlier(); list a value that does not"),
    ],
)  # fmt: skip
def test_earlier_checker_errors(check: str, kwargs: dict[str, str], message: str) -> None:
    _, _, diags = checked(_group_rule(check, **kwargs))
    assert [d.message for d in diags if d.severity == "error"] == [message]


def test_earlier_outside_any_group() -> None:
    assert errors_of("len(earlier(n)) >= 0") == [NEITHER.format("n")]
    _, _, diags = checked(rule_text("1", actions=("set item.x = len(earlier(item))",)))
    assert [d.message for d in diags if d.severity == "error"] == [NEITHER.format("item")]


def test_earlier_types_and_a_helper_of_that_name_wins() -> None:
    _, compiled, diags = checked(_group_rule("all(z in earlier(size): z > 0) and len(earlier(it)) >= 0"))
    assert compiled is not None and not [d for d in diags if d.severity == "error"]
    assert len(compiled.res.earlier) == 2
    cat = _catalogue()
    cat.add_helper("earlier", "x: int", "int", "A domain helper that happens to be called earlier.", lambda x: x)
    model, _ = read_rule_text(_group_rule("earlier(size) > 0"), "t.yaml")
    assert model is not None
    res, diags = check_rule(model.rules[0], cat)
    assert not [d for d in diags if d.severity == "error"] and not res.earlier


def test_indexing_by_a_range_variable() -> None:
    """A quantifier over range(n) indexes without a sign test; past the end it faults as the closures do."""
    assert ev("all(a in range(3): xs[a] >= 0)") is True
    assert ev("count(a in range(8): xs[a] > 2)") == 5
    with pytest.raises(EvalError, match="index 8 is out of range"):
        ev("all(a in range(10): xs[a] >= 0)")
    rule, compiled, _ = checked(rule_text("all(a in range(3): xs[a] >= 0)"))
    assert compiled is not None
    src = codegen._generate(compiled.res, LIMIT, lambda g: g.expr(rule.lets[-1].expr.node), init_lets=True)
    assert src is not None and " >= 0 else None]" not in pyast.unparse(src[1])


def test_a_field_declared_by_its_inline_form_alone_reads_the_same_in_closures() -> None:
    class Box:
        def __init__(self, items: tuple[int, ...]) -> None:
            self.items = items

    cat = Catalogue()
    cat.add_entity("Box", "A box.", [("count", "int", "How many.", None, "len({0}.items)")])
    getter = cat.entities["Box"].fields["count"].get
    assert getter(Box((1, 2, 3))) == 3 and getter(Box(())) == 0
    assert set(getter.__globals__["__builtins__"]) == {"len", "list", "isinstance", "int", "min"}  # nothing else
    with pytest.raises(ValueError, match="needs a getter or an inline form"):
        cat.add_entity("Empty", "x", [("f", "int", "x", None, None, "{0}.a")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="may not contain"):
        cat.add_entity("Evil", "x", [("f", "int", "x", None, "__import__('os')")])
