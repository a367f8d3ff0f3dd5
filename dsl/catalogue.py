"""The declared catalogue: every name a rule may use, with its type and a one-line doc.

The language itself knows no graph. What a rule can see (entity types such as Node or TensorDesc with their
typed fields, helper functions with typed signatures, the root bindings such as `node` and `graph`) is data
that the engine and the domain register here. The checker resolves names against it, the compiler binds
fields and helpers to their Python implementations through it, and `rulepass catalogue` and the docs print
it, so the three cannot drift apart.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import keyword
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .templates import INLINE_BUILTINS, check_template, instantiate

# ---- types -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Type:
    """A static type: a primitive (bool int float str null any), `list[T]`, or an entity; `?` = may be null."""

    name: str
    elem: Type | None = None
    nullable: bool = False

    def __str__(self) -> str:
        base = f"list[{self.elem}]" if self.name == "list" else self.name
        return base + ("?" if self.nullable and self.name not in ("null", "any") else "")

    @property
    def is_list(self) -> bool:
        """True for list types."""
        return self.name == "list"

    def non_null(self) -> Type:
        """The same type without `?`."""
        return Type(self.name, self.elem, False) if self.nullable else self

    def or_null(self) -> Type:
        """The same type with `?`."""
        return self if self.nullable or self.name in ("null", "any") else Type(self.name, self.elem, True)

    def item(self) -> Type:
        """The type of an element taken out of this list: its element type, or `any` for the empty list's
        `nothing` (no element is ever taken out of it, and what is written against one is not checked)."""
        assert self.elem is not None
        return ANY if self.elem.name == "nothing" else self.elem


BOOL = Type("bool")
INT = Type("int")
FLOAT = Type("float")
STR = Type("str")
NULL = Type("null")
ANY = Type("any")
# the element type of the empty list literal `[]`: no value has it, so it joins with every type (`if c then []
# else [1]` is a list[int]) and a list[nothing] may stand wherever any list is expected
NOTHING = Type("nothing")
PRIMITIVES = ("bool", "int", "float", "str", "null", "any")


def list_of(elem: Type) -> Type:
    """The type `list[elem]`."""
    return Type("list", elem)


_TYPE_TOKEN = re.compile(r"\s*(list\[|\]|\?|[A-Za-z_][A-Za-z0-9_]*)")


def parse_type(text: str) -> Type:
    """Parse a type written as in the docs: `int`, `list[OutputAnchor]`, `TensorDesc?`."""
    tokens = _TYPE_TOKEN.findall(text)
    if "".join(tokens).replace(" ", "") != text.replace(" ", ""):
        raise ValueError(f"bad type {text!r}")
    pos = 0

    def one() -> Type:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "list[":
            elem = one()
            if pos >= len(tokens) or tokens[pos] != "]":
                raise ValueError(f"bad type {text!r}")
            pos += 1
            t = list_of(elem)
        else:
            t = Type(tok)
        if pos < len(tokens) and tokens[pos] == "?":
            pos += 1
            t = t.or_null()
        return t

    result = one()
    if pos != len(tokens):
        raise ValueError(f"bad type {text!r}")
    return result


# ---- catalogue entries ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """A field of an entity type: its type, doc, and how to read it from a Python object."""

    name: str
    type: Type
    doc: str
    get: Callable[[Any], Any]
    settable: bool = False  # an action may `set` it (through the entity's setter), with a value of its type
    # the field is this attribute path of the object (`op.type`); generated code reads it directly
    path: str | None = None
    # or this inline form of the getter (`len({0}.shape)`, see `check_template`), which generated code uses
    inline: str | None = None
    # for a list field the getter copies (from an immutable sequence, e.g. a tuple) or builds: an inline form
    # giving the stored sequence itself (`{f}`, the getter, where there is none), which generated code uses where
    # the value is only measured, indexed, sliced or iterated (a quantifier's or a group's collection), or passed
    # to a helper declaring `reads_views` (nowhere it is compared, joined or kept)
    view: str | None = None
    # for a list of entities each made of its owner and its position (a node's input anchors): how generated
    # code loops over it without building the list, see IndexedList
    indexed: IndexedList | None = None
    # for an int field whose inline form is the length of a sibling list field that is never null (`len({0}.shape)`
    # beside `shape`'s view `{0}.shape`): that sequence's form, which generated code tests for emptiness directly
    # (derived by `add_entity`)
    length_of: str | None = None
    # for a bool field whose inline form tests a sibling nullable field's for null (`connected`, `peer`'s form
    # followed by `is not None`): that sibling, which generated code reads once for both (derived by `add_entity`)
    not_null_of: FieldSpec | None = None


@dataclass(frozen=True)
class IndexedList:
    """A list field whose element k is `make(owner, k)` for k below `count` (an inline form of the owner, e.g.
    `len({0}.in_peers)`), and whose element type has the fields `parts` = (owner field, index field) as attribute
    paths of the same names. A loop over it in generated code counts instead of building the list: the
    element's fields whose inline forms read it only through those two become reads of the owner and the
    position, and the element itself is made only where its value is needed."""

    count: str
    make: Callable[[Any, int], Any]
    parts: tuple[str, str]


@dataclass(frozen=True)
class EntitySpec:
    """An entity type the rules can navigate (e.g. Node), with its fields and optional attribute setter."""

    name: str
    doc: str
    fields: Mapping[str, FieldSpec]
    parents: tuple[str, ...] = ()
    set_attr: Callable[[Any, str, Any], None] | None = None
    # how a decision record shows a value: its identity (names, places, shapes), as it stands when the candidate
    # is decided (the engine describes a miss's elements then)
    describe: Callable[[Any], str] = str
    # the inline form of the dict an attribute (not a field) of this entity is stored in, e.g. `{0}.op.attrs`:
    # generated actions write there directly, as `set_attr` would
    attrs_inline: str | None = None
    # the inline form of a value that equals another's exactly when the two entities are equal (`==`) and hashes
    # without a Python call, e.g. `({0}.node, {0}.index)`: generated code keeps a set of these for `x in earlier(x)`
    key_inline: str | None = None


@dataclass(frozen=True)
class EditSpec:
    """A structural action the domain offers (`insert OP before x`, `insert OP after x`, `bypass x`): the entity
    its target must be, the op types an insert may name, why it cannot be done on a target (None: it can; asked
    when the actions are evaluated, so a refusal changes nothing) and how to do it (returns a line saying what
    it did, kept in the decision record)."""

    kind: str  # "insert_before" | "insert_after" | "bypass"
    entity: str
    doc: str
    op_types: tuple[str, ...]
    why_not: Callable[[Any, str], str | None]
    apply: Callable[[Any, str, Any], str]


EDIT_KINDS = ("insert_before", "insert_after", "bypass")
_NO_DEFAULT: Any = object()
_ATTR_NAME = re.compile(r"[a-z][a-z0-9_]*")  # a public attribute name (no dunders, nothing to import)
_LENGTH_FORM = re.compile(r"len\((.+)\)")  # an inline form that is the length of what it encloses


def _check_inline(helper: str, key: str, template: str) -> None:
    """A helper's inline form, keyed `<first argument's type>/<argument count>`, or with `/true` or `/false`
    after it for a call whose last argument is that literal: see `check_template` (`{f}` is the helper itself,
    e.g. for the uncommon case of a form that shortcuts the common one)."""
    etype, _, rest = key.partition("/")
    count, _, literal = rest.partition("/")
    if not etype or not count.isdigit() or literal not in ("", "true", "false"):
        raise ValueError(f"helper '{helper}': inline key '{key}' is not '<type>/<argument count>[/true|/false]'")
    check_template(f"helper '{helper}'", template, int(count), helper=True)


def getter_from_inline(what: str, template: str) -> Callable[[Any], Any]:
    """A field's getter made from its inline form (checked by `check_template` first): the form's tree (parsed
    once, see :mod:`.templates`) as the body of a function of the object, seeing only :data:`INLINE_BUILTINS`.
    The form is the catalogue's declaration, never a rule's text; closures and generated code so read the field
    alike."""
    expr = instantiate(template, [ast.Name("obj", ast.Load())], temp="tmp")
    args = ast.arguments(posonlyargs=[], args=[ast.arg("obj")], kwonlyargs=[], kw_defaults=[], defaults=[])
    tree = ast.fix_missing_locations(ast.Expression(ast.Lambda(args, expr)))
    allowed = {n: getattr(builtins, n) for n in INLINE_BUILTINS}
    getter: Callable[[Any], Any] = eval(compile(tree, f"<field {what}>", "eval"), {"__builtins__": allowed})
    return getter


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a helper; `default` makes it optional."""

    name: str
    type: Type
    default: Any = _NO_DEFAULT

    @property
    def optional(self) -> bool:
        """True when the parameter has a default."""
        return self.default is not _NO_DEFAULT


@dataclass(frozen=True)
class HelperSpec:
    """A helper function the rules can call, with its typed signature, doc and implementation."""

    name: str
    params: tuple[ParamSpec, ...]
    returns: Type
    doc: str
    fn: Callable[..., Any]
    group: str = "builtin"
    # pure and costly: while deciding one candidate (the graph does not change), the engine may reuse its
    # result for equal (hashable) arguments
    memo: bool = False
    # what generated code may write instead of the call, by "<first argument's static type>/<argument count>"
    # (a key ending "/true" or "/false" serves a call whose last argument is that literal, before the plain one):
    # a Python expression over the arguments {0}, {1}, ... (and a temporary {t}) with the same value (or a fault
    # where the call raises), written by the domain; `check_template` checks it when registered
    inline: Mapping[str, str] = field(default_factory=dict)
    # the helper (and its inline forms) only reads its list-typed arguments (length, elements, iteration) and
    # returns none of them, so generated code may pass a field's `view` (e.g. a tuple) for one
    reads_views: bool = False

    def signature(self) -> str:
        """`name(a: T, b: U = d) -> R`."""
        ps = ", ".join(f"{p.name}: {p.type}" + (f" = {p.default!r}" if p.optional else "") for p in self.params)
        return f"{self.name}({ps}) -> {self.returns}"


@dataclass
class Catalogue:
    """Entities, helpers and root bindings, as registered by the engine and the domain."""

    entities: dict[str, EntitySpec] = field(default_factory=dict)
    helpers: dict[str, HelperSpec] = field(default_factory=dict)
    roots: dict[str, tuple[Type, str]] = field(default_factory=dict)
    edits: dict[str, EditSpec] = field(default_factory=dict)

    def add_edit(
        self,
        kind: str,
        entity: str,
        doc: str,
        op_types: Iterable[str],
        why_not: Callable[[Any, str], str | None],
        apply: Callable[[Any, str, Any], str],
    ) -> None:
        """Offer a structural action (`kind` one of EDIT_KINDS) on values of `entity`; see EditSpec."""
        if kind not in EDIT_KINDS or kind in self.edits:
            raise ValueError(f"edit '{kind}' unknown or registered twice")
        if entity not in self.entities:
            raise ValueError(f"edit '{kind}' on unknown entity '{entity}'")
        self.edits[kind] = EditSpec(kind, entity, doc, tuple(op_types), why_not, apply)

    def add_entity(
        self,
        name: str,
        doc: str,
        fields: Iterable[
            tuple[str, str, str, Callable[[Any], Any] | str]
            | tuple[str, str, str, Callable[[Any], Any] | None, str]
            | tuple[str, str, str, Callable[[Any], Any] | None, str | None, str]
        ],
        *,
        parents: tuple[str, ...] = (),
        set_attr: Callable[[Any, str, Any], None] | None = None,
        describe: Callable[[Any], str] = str,
        settable: Iterable[str] = (),
        attrs_inline: str | None = None,
        indexed: Mapping[str, IndexedList] | None = None,
        key_inline: str | None = None,
    ) -> None:
        """Register an entity type; fields are (name, type, doc, getter), the getter a function of the object or
        an attribute path (`"op.type"`), or (name, type, doc, function, inline form[, view]) where the inline form
        (`"len({0}.shape)"`, see `check_template`; None for none) is what generated code uses (a function of None
        is made from the inline form, so the field's meaning is written once), and the view (a list
        field's stored sequence without the getter's copy, see FieldSpec) what it uses where only the elements are
        read;
        `settable` fields may be set by actions; `attrs_inline` is the inline form of the dict the entity's
        attributes live in (what the inherited `set_attr` writes for a name that is not a field); `indexed`
        declares list fields whose elements are made of the entity and a position (see IndexedList); `key_inline`
        the inline form of the entity's equality key (see EntitySpec)."""
        if name in self.entities or name in PRIMITIVES or name == "list":
            raise ValueError(f"entity '{name}' registered twice or shadows a builtin type")
        writable = set(settable)
        specs = {f: _field_spec(name, f, t, d, g, form, f in writable) for f, t, d, g, *form in fields}
        _derive_lengths_and_tests(specs)
        for f, ix in (indexed or {}).items():
            if f not in specs or not specs[f].type.is_list:
                raise ValueError(f"entity '{name}': indexed field '{f}' is not one of its list fields")
            check_template(f"field '{name}.{f}' count", ix.count, 1)
            specs[f] = dataclasses.replace(specs[f], indexed=ix)
        if attrs_inline is not None:
            check_template(f"entity '{name}' attributes", attrs_inline, 1)
        if key_inline is not None:
            check_template(f"entity '{name}' key", key_inline, 1)
        self.entities[name] = EntitySpec(name, doc, specs, parents, set_attr, describe, attrs_inline, key_inline)
        self._check_indexed()

    def _check_indexed(self) -> None:
        """Every indexed list whose element type is registered: the element has its parts as attribute paths."""
        for e in self.entities.values():
            for f in e.fields.values():
                elem = f.type.elem
                owner = self.entities.get(elem.name) if f.indexed is not None and elem is not None else None
                if owner is None or f.indexed is None:
                    continue
                for part in f.indexed.parts:
                    spec = owner.fields.get(part)
                    if spec is None or spec.path != part:
                        raise ValueError(
                            f"field '{e.name}.{f.name}': indexed elements need '{owner.name}.{part}' as the path "
                            f"'{part}'"
                        )

    def add_helper(
        self,
        name: str,
        params: str,
        returns: str,
        doc: str,
        fn: Callable[..., Any],
        *,
        group: str = "builtin",
        defaults: Mapping[str, Any] | None = None,
        memo: bool = False,
        inline: Mapping[str, str] | None = None,
        reads_views: bool = False,
    ) -> None:
        """Register a helper; `params` reads like `x: int, ys: list[int]`; `memo`, `inline`, `reads_views`: see
        HelperSpec."""
        if name in self.helpers:
            raise ValueError(f"helper '{name}' registered twice")
        ps: list[ParamSpec] = []
        for part in filter(None, (p.strip() for p in params.split(","))) if params else []:
            pname, _, ptype = part.partition(":")
            pname = pname.strip()
            default = (defaults or {}).get(pname, _NO_DEFAULT)
            ps.append(ParamSpec(pname, parse_type(ptype.strip()), default))
        for key, template in (inline or {}).items():
            _check_inline(name, key, template)
        self.helpers[name] = HelperSpec(
            name, tuple(ps), parse_type(returns), doc, fn, group, memo, dict(inline or {}), reads_views
        )

    def add_root(self, name: str, type_: str, doc: str) -> None:
        """Declare a variable bound for every candidate (e.g. `node`)."""
        self.roots[name] = (parse_type(type_), doc)

    def merged(self, other: Catalogue) -> Catalogue:
        """A new catalogue with the entries of both (names must not clash)."""
        out = Catalogue(dict(self.entities), dict(self.helpers), dict(self.roots), dict(self.edits))
        for k, ed in other.edits.items():
            if k in out.edits:
                raise ValueError(f"edit '{k}' defined twice")
            out.edits[k] = ed
        for k, e in other.entities.items():
            if k in out.entities:
                raise ValueError(f"entity '{k}' defined twice")
            out.entities[k] = e
        for k, h in other.helpers.items():
            if k in out.helpers:
                raise ValueError(f"helper '{k}' defined twice")
            out.helpers[k] = h
        for k, r in other.roots.items():
            out.roots[k] = r
        return out

    # ---- queries ----------------------------------------------------------------------------------------
    def ancestors(self, name: str) -> list[str]:
        """`name` and every entity it inherits from, nearest first."""
        out, todo = [], [name]
        while todo:
            n = todo.pop(0)
            if n not in out:
                out.append(n)
                e = self.entities.get(n)
                if e is not None:
                    todo.extend(e.parents)
        return out

    def field(self, entity: str, name: str) -> FieldSpec | None:
        """The field `name` of `entity` or of one of its parents."""
        for anc in self.ancestors(entity):
            e = self.entities.get(anc)
            if e is not None and name in e.fields:
                return e.fields[name]
        return None

    def field_names(self, entity: str) -> list[str]:
        """Every field name visible on `entity`."""
        names: list[str] = []
        for anc in self.ancestors(entity):
            e = self.entities.get(anc)
            if e is not None:
                names.extend(f for f in e.fields if f not in names)
        return names

    def setter(self, entity: str) -> Callable[[Any, str, Any], None] | None:
        """How to set an attribute on a value of `entity`, if it holds attributes."""
        for anc in self.ancestors(entity):
            e = self.entities.get(anc)
            if e is not None and e.set_attr is not None:
                return e.set_attr
        return None

    def describer(self, entity: str) -> Callable[[Any], str]:
        """How to show a value of `entity` in a decision record."""
        e = self.entities.get(entity)
        return e.describe if e is not None else str

    def assignable(self, actual: Type, expected: Type) -> bool:
        """Whether a value of type `actual` may be used where `expected` is required."""
        if actual.name in ("any", "nothing") or expected.name == "any":
            return True
        if actual.name == "null":
            return expected.nullable or expected.name == "null"
        if expected.name == "float" and actual.name == "int":
            return True
        if actual.is_list and expected.is_list:
            assert actual.elem is not None and expected.elem is not None
            return actual.elem.name in ("any", "null") or self.assignable(actual.elem, expected.elem)
        if actual.name in self.entities:
            return expected.name in self.ancestors(actual.name)
        return actual.name == expected.name

    def to_json(self) -> dict[str, Any]:
        """The catalogue as plain data (for `rulepass catalogue --format json` and the docs)."""
        return {
            "roots": {k: {"type": str(t), "doc": d} for k, (t, d) in sorted(self.roots.items())},
            "entities": {
                name: {
                    "doc": e.doc,
                    "parents": list(e.parents),
                    "attributes": e.set_attr is not None,
                    "fields": {
                        f.name: {"type": str(f.type), "doc": f.doc, "settable": f.settable} for f in e.fields.values()
                    },
                }
                for name, e in sorted(self.entities.items())
            },
            "helpers": {
                name: {"signature": h.signature(), "doc": h.doc, "group": h.group}
                for name, h in sorted(self.helpers.items())
            },
        }


def _field_spec(
    entity: str,
    f: str,
    t: str,
    d: str,
    g: Callable[[Any], Any] | str | None,
    form: Sequence[str | None],
    writable: bool,
) -> FieldSpec:
    """The spec of the field `f` of `entity`, of type `t` and doc `d`: read by the attribute path `g`, or by the
    function `g` and/or the inline form `form[0]` (with, as `form[1]`, the view of a list field)."""
    where = f"{entity}.{f}"
    if isinstance(g, str):
        if not all(_ATTR_NAME.fullmatch(part) and not keyword.iskeyword(part) for part in g.split(".")):
            raise ValueError(f"field '{where}': '{g}' is not an attribute path")
        return FieldSpec(f, parse_type(t), d, operator.attrgetter(g), writable, g)
    inline = form[0] if form else None
    view = form[1] if len(form) > 1 else None
    if inline is not None:
        check_template(f"field '{where}'", inline, 1)
    if g is None:
        if inline is None:
            raise ValueError(f"field '{where}': a field needs a getter or an inline form")
        g = getter_from_inline(where, inline)
    if view is not None:  # `{f}` is the getter (a view may give the stored sequence only where one is)
        check_template(f"field '{where}' view", view, 1, helper=True)
    ft = parse_type(t)
    if view is not None and not (ft.is_list and ft.elem is not None and not ft.elem.is_list):
        # a view's elements are the stored ones: scalars and entities compare alike in a tuple and a
        # list, lists do not (a tuple of tuples is not a list of lists)
        raise ValueError(f"field '{where}': only a list of scalars or entities has a view")
    return FieldSpec(f, ft, d, g, writable, inline=inline, view=view)


def _derive_lengths_and_tests(specs: dict[str, FieldSpec]) -> None:
    """Mark, in place, the int fields that are the length of a never-null list field of the same entity
    (`length_of`) and the bool fields that test a nullable field for null (`not_null_of`)."""
    sequences = {  # the forms of the entity's list fields that are never null
        form
        for spec in specs.values()
        if spec.type.is_list and not spec.type.nullable
        for form in (spec.view, f"{{0}}.{spec.path}" if spec.path is not None else None)
        if form is not None
    }
    for f, spec in list(specs.items()):
        sized = _LENGTH_FORM.fullmatch(spec.inline or "")
        if sized is not None and sized.group(1) in sequences and spec.type == INT:
            specs[f] = dataclasses.replace(spec, length_of=sized.group(1))
    for f, spec in list(specs.items()):
        tested = [
            other
            for other in specs.values()
            if other.inline is not None and other.type.nullable and spec.inline == f"{other.inline} is not None"
        ]
        if tested and spec.type == BOOL:
            specs[f] = dataclasses.replace(spec, not_null_of=tested[0])
