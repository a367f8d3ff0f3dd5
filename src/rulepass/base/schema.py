"""JSON Schema checks that speak the user's language and point at the file.

jsonschema's raw messages ("... is not valid under any of the given schemas") name no line and rarely say what
to do. This module validates a :class:`YamlDoc` and turns each error into one :class:`Diagnostic` at the key or
value concerned: unknown keys with a "did you mean", missing keys, wrong types, and for alternatives
(`anyOf`) the branch that matches the value's kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import fastjsonschema

if TYPE_CHECKING:  # jsonschema is imported only to explain a failure (it costs more to load than to validate)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

from .diagnostics import Diagnostic, did_you_mean
from .yaml_source import YamlDoc

_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}
_KIND_WORDS = {
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "a list",
    "object": "a mapping",
    "null": "null",
}


@cache
def load_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped as package data."""
    data: dict[str, Any] = json.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
    return data


@cache
def _validator(package: str, name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(package, name))


@cache
def _fast_check(package: str, name: str) -> Callable[[Any], object]:
    """The schema compiled to Python by fastjsonschema: a quick yes/no before jsonschema explains a no."""
    schema = {k: v for k, v in load_schema(package, name).items() if k != "$schema"}
    return fastjsonschema.compile(schema)  # type: ignore[no-any-return]


def is_valid(data: Any, package: str, schema_name: str) -> bool:
    """Whether `data` satisfies a packaged schema (fast path; jsonschema explains the failures)."""
    try:
        _fast_check(package, schema_name)(data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


_PATTERN_WORDS = {"^[A-Za-z_][A-Za-z0-9_]*$(?!\\n)": "an identifier (letters, digits, _)"}


def _kind(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _type_ok(value: object, types: object) -> bool:
    kinds = types if isinstance(types, list) else [types]
    k = _kind(value)
    return k in kinds or (k == "integer" and "number" in kinds)


def _branch_matches_kind(err: ValidationError, value: object) -> bool:
    schema = err.schema if isinstance(err.schema, dict) else {}
    t = schema.get("type")
    return t is None or _type_ok(value, t)


def _pick(err: ValidationError) -> ValidationError:
    """For anyOf/oneOf, descend into the branch that fits the value's kind."""
    while err.validator in ("anyOf", "oneOf") and err.context:
        by_branch: dict[int, list[ValidationError]] = {}
        for sub in err.context:
            by_branch.setdefault(int(sub.schema_path[0]), []).append(sub)
        candidates = []
        for branch_errors in by_branch.values():
            typed = [e for e in branch_errors if e.validator != "type"]
            if typed and all(e.validator != "type" or len(e.relative_path) > 0 for e in branch_errors):
                candidates.append(branch_errors)
        if len(candidates) != 1:
            return err
        deepest = max(candidates[0], key=lambda e: (len(e.absolute_path), e.validator != "required"))
        err = deepest
    return err


def _describe_alternatives(err: ValidationError) -> str:
    schema = err.schema if isinstance(err.schema, dict) else {}
    desc = schema.get("description")
    if isinstance(desc, str):
        return desc
    kinds: list[str] = []
    for alt in schema.get(str(err.validator), []):
        if isinstance(alt, dict):
            t = alt.get("type")
            for k in t if isinstance(t, list) else [t]:
                if isinstance(k, str) and _KIND_WORDS.get(k, k) not in kinds:
                    kinds.append(_KIND_WORDS.get(k, k))
    return "expected " + " or ".join(kinds) if kinds else "no alternative matches"


def _to_diagnostic(doc: YamlDoc, err: ValidationError, what: str) -> Iterable[Diagnostic]:
    err = _pick(err)
    path = list(err.absolute_path)
    value = err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}
    where = f" in {what}" if not path else ""
    if err.validator == "additionalProperties" and isinstance(value, dict):
        allowed = list(schema.get("properties", {}))
        for key in sorted(k for k in value if k not in allowed):
            yield Diagnostic(
                "schema",
                f"unknown key '{key}'{where}",
                doc.span([*path, key], key=True),
                hint=did_you_mean(key, allowed) or f"allowed keys: {', '.join(allowed)}",
            )
        return
    if err.validator == "required" and isinstance(value, dict):
        missing = [k for k in list(err.validator_value) if k not in value]  # type: ignore[arg-type]
        for key in missing:
            yield Diagnostic("schema", f"missing required key '{key}'{where}", doc.span(path))
        return
    if err.validator == "type":
        expected = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        words = " or ".join(_KIND_WORDS.get(str(t), str(t)) for t in expected)
        span = doc.span(path)
        found = _KIND_WORDS.get(_kind(value), _kind(value))
        hint = None
        if "string" in expected and (value is None or isinstance(value, (bool, int, float))):
            raw = span.source.line_text(span.line)[span.col - 1 : span.end_col] if span.source else ""
            if value is None:
                hint = "the value is missing"
            elif raw.strip():
                hint = f'YAML reads `{raw.strip()}` as {found}; quote it to make it a string: "{raw.strip()}"'
        yield Diagnostic("schema", f"expected {words}, found {found}", span, hint=hint)
        return
    if err.validator in ("anyOf", "oneOf"):
        shown = json.dumps(value) if not isinstance(value, (dict, list)) else _KIND_WORDS[_kind(value)]
        yield Diagnostic("schema", f"invalid value {shown}: {_describe_alternatives(err)}", doc.span(path))
        return
    if err.validator == "pattern" and "propertyNames" in err.relative_schema_path and isinstance(value, str):
        desc = schema.get("description") or _PATTERN_WORDS.get(str(schema.get("pattern")))
        yield Diagnostic(
            "schema",
            f"invalid key {json.dumps(value)}" + (f": {desc}" if desc else f": must match {schema.get('pattern')}"),
            doc.span([*path, value], key=True),
        )
        return
    if err.validator == "pattern":
        desc = schema.get("description")
        yield Diagnostic("schema", f"invalid value {json.dumps(value)}" + (f": {desc}" if desc else ""), doc.span(path))
        return
    if err.validator == "enum":
        options = [str(v) for v in list(err.validator_value)]  # type: ignore[arg-type]
        yield Diagnostic(
            "schema",
            f"invalid value {json.dumps(value)}: expected one of {', '.join(options)}",
            doc.span(path),
            hint=did_you_mean(str(value), options),
        )
        return
    yield Diagnostic("schema", err.message, doc.span(path))


def schema_diagnostics(
    doc: YamlDoc,
    package: str,
    schema_name: str,
    *,
    what: str,
    context: Callable[[list[str | int]], str] | None = None,
) -> list[Diagnostic]:
    """Every schema violation of `doc` against a packaged schema, one located diagnostic each, file order.

    `context`, given the path of the value a violation is about, returns a prefix for its message (e.g. the node
    and field it is in; '' for none)."""
    if is_valid(doc.data, package, schema_name):
        return []
    validator = _validator(package, schema_name)
    out: list[Diagnostic] = []
    seen: set[tuple[str, int, int]] = set()
    for err in validator.iter_errors(doc.data):
        prefix = context(list(_pick(err).absolute_path)) if context is not None else ""
        for found in _to_diagnostic(doc, err, what):
            diag = replace(found, message=f"{prefix}: {found.message}") if prefix else found
            key = (diag.message, diag.span.line if diag.span else 0, diag.span.col if diag.span else 0)
            if key not in seen:
                seen.add(key)
                out.append(diag)
    out.sort(key=lambda d: (d.span.line, d.span.col) if d.span else (0, 0))
    return out
