"""Expression and action strings -> AST, parsed with lark (LALR), every error located in the rule file.

The AST is built bottom-up while the LALR parser runs (lark's inline transformer), so nothing recurses over
the input: a 100,000-character expression is refused by length, a deeply nested one by depth, with a clear
error either way. Strings are unescaped here by hand; no user text is ever evaluated as Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..base.diagnostics import Diagnostic, RulepassError
from ..base.limits import MAX_EXPR_DEPTH, LimitError, int_literal
from . import ast

MAX_EXPR_CHARS = 20_000
MAX_DEPTH = MAX_EXPR_DEPTH

_TOKEN_WORDS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "QUANT": "a quantifier (all, any, none, count, distinct)",
    "CMPOP": "a comparison (==, !=, <, <=, >, >=)",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "MULOP": "'*', '/', '//' or '%'",
    "NOT": "'not'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "COLON": "':'",
    "DOT": "'.'",
    "EQUAL": "'='",
    "INSERT_AT": "'before' or 'after'",
    "$END": "end of expression",
}


class _DepthError(Exception):
    def __init__(self, start: int, end: int) -> None:
        super().__init__()
        self.start, self.end = start, end


class _LimitError(_DepthError):
    def __init__(self, start: int, end: int, message: str) -> None:
        super().__init__(start, end)
        self.message = message


def _unescape(raw: str) -> str:
    body = raw[1:-1]
    out: list[str] = []
    i = 0
    table = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(table.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _pos(item: Any) -> tuple[int, int]:
    if isinstance(item, Token):
        return int(item.start_pos or 0), int(item.end_pos or 0)
    assert isinstance(item, ast.Node)
    return item.start, item.end


class _Build(Transformer[Token, Any]):
    """Inline (bottom-up) AST construction; `keep_all_tokens` gives every node its exact extent."""

    def _mk(self, cls: type[ast.Node], items: list[Any], *args: Any, kids: Sequence[ast.Node] = (), **kw: Any) -> Any:
        # items are in source order (keep_all_tokens): the extent runs from the first located item to the last
        first = next(i for i in items if isinstance(i, (Token, ast.Node)))
        last = next(i for i in reversed(items) if isinstance(i, (Token, ast.Node)))
        start: int = (first.start_pos or 0) if isinstance(first, Token) else first.start
        end: int = (last.end_pos or 0) if isinstance(last, Token) else last.end
        depth = 1
        for i in items:
            if isinstance(i, ast.Node) and i.depth >= depth:
                depth = i.depth + 1
        for k in kids:
            if k.depth >= depth:
                depth = k.depth + 1
        if depth > MAX_DEPTH:
            raise _DepthError(start, end)
        return cls(start, end, depth, *args, **kw)

    @staticmethod
    def _nodes(items: list[Any]) -> list[ast.Node]:
        return [i for i in items if isinstance(i, ast.Node)]

    def expr_start(self, items: list[Any]) -> Any:
        return items[0]

    def action_start(self, items: list[Any]) -> Any:
        return items[0]

    def int_lit(self, items: list[Any]) -> Any:
        t = str(items[0])
        try:
            value = int_literal(t[2:], 16) if t.startswith("0x") else int_literal(t)
        except LimitError as exc:
            raise _LimitError(*_pos(items[0]), str(exc)) from None
        return self._mk(ast.Lit, items, value)

    def float_lit(self, items: list[Any]) -> Any:
        return self._mk(ast.Lit, items, float(str(items[0])))

    def str_lit(self, items: list[Any]) -> Any:
        return self._mk(ast.Lit, items, _unescape(str(items[0])))

    def true_lit(self, items: list[Any]) -> Any:
        return self._mk(ast.Lit, items, True)

    def false_lit(self, items: list[Any]) -> Any:
        return self._mk(ast.Lit, items, False)

    def null_lit(self, items: list[Any]) -> Any:
        return self._mk(ast.Lit, items, None)

    def name(self, items: list[Any]) -> Any:
        return self._mk(ast.Name, items, str(items[0]))

    def atom(self, items: list[Any]) -> Any:  # "(" expr ")"
        inner = self._nodes(items)[0]
        start, end = _pos(items[0])[0], _pos(items[-1])[1]
        return type(inner)(**{**inner.__dict__, "start": start, "end": end})

    def args(self, items: list[Any]) -> Any:
        return self._nodes(items)

    def where(self, items: list[Any]) -> Any:
        return self._nodes(items)[0]

    def call(self, items: list[Any]) -> Any:
        args = items[2] if isinstance(items[2], list) else []
        return self._mk(ast.Call, items, str(items[0]), tuple(args), None, _pos(items[0])[0], kids=args)

    def method(self, items: list[Any]) -> Any:
        recv, name = items[0], items[2]
        args = items[4] if isinstance(items[4], list) else []
        return self._mk(ast.Call, items, str(name), tuple(args), recv, _pos(name)[0], kids=args)

    def attr(self, items: list[Any]) -> Any:
        return self._mk(ast.Attr, items, items[0], str(items[2]))

    def index(self, items: list[Any]) -> Any:
        return self._mk(ast.Index, items, items[0], items[2])

    def slice(self, items: list[Any]) -> Any:
        # postfix "[" [expr] ":" [expr] "]" -> [obj, "[", lo|None, ":", hi|None, "]"]
        return self._mk(ast.Slice, items, items[0], items[2], items[4])

    def quant(self, items: list[Any]) -> Any:
        # QUANT "(" NAME "in" expr where? ":" expr ")"
        nodes = self._nodes(items)
        where = nodes[1] if len(nodes) == 3 else None
        var = items[2]
        return self._mk(ast.Quant, items, str(items[0]), str(var), nodes[0], where, nodes[-1], _pos(var)[0])

    def list_lit(self, items: list[Any]) -> Any:
        elems = items[1] if isinstance(items[1], list) else []
        return self._mk(ast.ListLit, items, tuple(elems), kids=elems)

    def neg(self, items: list[Any]) -> Any:
        return self._mk(ast.Unary, items, "-", items[1])

    def not_(self, items: list[Any]) -> Any:
        return self._mk(ast.Unary, items, "not", items[1])

    def arith(self, items: list[Any]) -> Any:
        return self._mk(ast.Arith, items, str(items[1]), items[0], items[2])

    def compare(self, items: list[Any]) -> Any:
        return self._mk(ast.Compare, items, str(items[1]), items[0], items[2])

    def in_(self, items: list[Any]) -> Any:
        return self._mk(ast.Compare, items, "in", items[0], items[2])

    def not_in(self, items: list[Any]) -> Any:
        return self._mk(ast.Compare, items, "not in", items[0], items[3])

    def and_(self, items: list[Any]) -> Any:
        return self._mk(ast.BoolOp, items, "and", tuple(self._nodes(items)))

    def or_(self, items: list[Any]) -> Any:
        return self._mk(ast.BoolOp, items, "or", tuple(self._nodes(items)))

    def ifelse(self, items: list[Any]) -> Any:
        c, t, e = self._nodes(items)
        return self._mk(ast.IfElse, items, c, t, e)

    def set_action(self, items: list[Any]) -> Any:
        # "set" postfix "=" expr
        target, value = items[1], items[3]
        if isinstance(target, ast.Attr):
            return self._mk(ast.SetAction, items, target.obj, target.name, value)
        if isinstance(target, ast.Index) and isinstance(target.index, ast.Lit) and isinstance(target.index.value, str):
            return self._mk(ast.SetAction, items, target.obj, target.index.value, value)
        raise _TargetError(target.start, target.end)

    def for_action(self, items: list[Any]) -> Any:
        nodes = self._nodes(items)
        where = nodes[1] if len(nodes) == 3 else None
        var = items[1]
        return self._mk(ast.ForAction, items, str(var), nodes[0], where, nodes[-1], _pos(var)[0])

    def insert_action(self, items: list[Any]) -> Any:
        # "insert" NAME INSERT_AT expr
        return self._mk(ast.EditAction, items, f"insert_{items[2]}", str(items[1]), items[3])

    def bypass_action(self, items: list[Any]) -> Any:
        return self._mk(ast.EditAction, items, "bypass", "", items[1])


class _TargetError(Exception):
    def __init__(self, start: int, end: int) -> None:
        super().__init__()
        self.start, self.end = start, end


@cache
def _parser() -> Lark:
    grammar = resources.files("rulepass.dsl").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        start=["expr_start", "action_start"],
        transformer=_Build(),
        keep_all_tokens=True,
        maybe_placeholders=True,
    )


_EXPR_START = {"NAME", "INT", "FLOAT", "STRING", "QUANT", "LPAR", "LSQB", "MINUS", "NOT", "TRUE", "FALSE", "NULL", "IF"}
_OPERATORS = {"CMPOP", "PLUS", "MINUS", "MULOP", "AND", "OR", "IN", "NOT", "DOT", "LSQB"}


def _expected(words: Iterable[Any]) -> str:
    ws = {str(w) for w in words}
    parts: list[str] = []
    if ws & {"NAME", "INT", "STRING"}:
        parts.append("an expression")
        ws -= _EXPR_START
    if len(ws & _OPERATORS) >= 3:
        parts.append("an operator")
        ws -= _OPERATORS
    end = "$END" in ws
    ws.discard("$END")
    parts.extend(sorted(_TOKEN_WORDS.get(w, f"'{w.lower()}'" if w.isalpha() else w) for w in ws))
    if end:
        parts.append("the end of the expression")
    return " or ".join(parts) if len(parts) <= 2 else ", ".join(parts[:-1]) + " or " + parts[-1]


@lru_cache(maxsize=8192)
def _parse_cached(text: str, start: str) -> ast.Node:
    """The AST of `text`. Cached: nodes are immutable and hold offsets into their own string, so identical
    expressions (rule files repeat many) share one AST; file positions come from each use's ExprSource.
    Failures are not cached (they raise)."""
    result: Any = _parser().parse(text, start=start)
    assert isinstance(result, ast.Node)
    return result


def _parse(text: str, src: ast.ExprSource, start: str, what: str) -> ast.Node:
    if len(text) > MAX_EXPR_CHARS:
        raise RulepassError(
            Diagnostic(
                "expr-too-long",
                f"{what} is {len(text)} characters long; the limit is {MAX_EXPR_CHARS}",
                src.span(0, 1),
                hint="split it into named checks or `let` bindings",
            )
        )
    if not text.strip():
        raise RulepassError(Diagnostic("expr-syntax", f"{what} is empty", src.span(0, 1)))
    try:
        return _parse_cached(text, start)
    except _LimitError as exc:
        raise RulepassError(Diagnostic("limit", exc.message, src.span(exc.start, exc.end))) from None
    except _DepthError as exc:
        raise RulepassError(
            Diagnostic(
                "expr-depth", f"{what} is nested more than {MAX_DEPTH} levels deep", src.span(exc.start, exc.end)
            )
        ) from None
    except _TargetError as exc:
        raise RulepassError(
            Diagnostic(
                "action-target",
                'expected an attribute to set, like `node._no_task` or `i.peer.desc["attr"]`',
                src.span(exc.start, exc.end),
            )
        ) from None
    except UnexpectedCharacters as exc:
        pos = int(exc.pos_in_stream or 0)
        raise RulepassError(
            Diagnostic("expr-syntax", f"unexpected character {text[pos]!r} in {what}", src.span(pos, pos + 1))
        ) from None
    except UnexpectedEOF as exc:
        n = len(text.rstrip())
        raise RulepassError(
            Diagnostic(
                "expr-syntax", f"{what} ends too early; expected {_expected(exc.expected)}", src.span(max(n - 1, 0), n)
            )
        ) from None
    except UnexpectedToken as exc:
        tok = exc.token
        try:  # the exact set of tokens that could continue here (LALR merges lookaheads)
            accepted = exc.interactive_parser.accepts() or exc.expected  # type: ignore[no-untyped-call]
        except Exception:
            accepted = exc.expected
        exc.expected = set(accepted)
        if tok.type == "$END":
            n = len(text.rstrip())
            msg = f"{what} ends too early; expected {_expected(exc.expected)}"
            raise RulepassError(Diagnostic("expr-syntax", msg, src.span(max(n - 1, 0), n))) from None
        pos = int(tok.start_pos or 0)
        msg = f"unexpected {str(tok)!r} in {what}; expected {_expected(exc.expected)}"
        raise RulepassError(
            Diagnostic("expr-syntax", msg, src.span(pos, max(int(tok.end_pos or pos + 1), pos + 1)))
        ) from None
    except UnexpectedInput as exc:  # any other lark input error
        raise RulepassError(Diagnostic("expr-syntax", f"invalid {what}: {exc}", src.span(0, 1))) from None
    except RecursionError:  # lark itself should never recurse on input size; refuse rather than crash
        raise RulepassError(Diagnostic("expr-depth", f"{what} is too deeply nested", src.span(0, 1))) from None


def parse_expr(text: str, src: ast.ExprSource | None = None) -> ast.Node:
    """Parse an expression string into an AST."""
    return _parse(text, src or ast.ExprSource(text), "expr_start", "expression")


def parse_action(text: str, src: ast.ExprSource | None = None) -> ast.Node:
    """Parse an action string (`set ...` or `for ...: ...`) into an AST."""
    return _parse(text, src or ast.ExprSource(text), "action_start", "action")
