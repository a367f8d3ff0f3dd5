"""Rule files in, checked and compiled rules out: the one entry point of the rule language.

`load_rules` reads files or folders (every `*.yaml`/`*.yml` not under a `fixtures` folder), collects every
diagnostic of every file (YAML, schema, expression syntax, names, types, unused bindings, duplicates, order
constraints) and compiles the rules that are sound. Callers decide whether warnings matter. `validate_rules`
checks the same way and returns only what a check reports (no compiled rules), so the outcome of a set read
before can come whole from the cache (:mod:`.cache`, :mod:`.rule_cache`); both take each file's parsed
expressions from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ..base.diagnostics import Diagnosed, Diagnostic, RulepassError
from ..base.files import read_bytes
from ..base.limits import MAX_RULE_FILE_BYTES
from .analyse import Analysed, analyse
from .cache import Store, code_digest, digest
from .catalogue import Catalogue
from .check import Resolution, check_rule, check_rule_set
from .compile import DEFAULT_STEP_LIMIT, CompiledRule, compile_closures
from .rule_cache import Validation, catalogue_digest, decode_validation, encode_validation, read_rule_bytes
from .rules import Parsed, Rule, RuleFile, resolve_shared

RULE_SUFFIXES = (".yaml", ".yml")


def compile_rule(
    rule: Rule, res: Resolution, *, step_limit: int = DEFAULT_STEP_LIMIT, generate: bool = True
) -> CompiledRule:
    """Compile a checked rule into closures and, unless `generate` is false, its generated decision function
    (built on the closures' compiled checks, so it lives above both modules)."""
    out = compile_closures(rule, res, step_limit=step_limit)
    if generate:
        out.generate_with(_generate)  # made when the engine first needs it
    return out


def _generate(rule: CompiledRule) -> Any:
    """The generated decision function of a compiled rule (codegen is imported only when some rule needs it)."""
    from .codegen import generate_rule

    return generate_rule(rule)


@dataclass
class RuleSet(Diagnosed):
    """The outcome of loading rule files: compiled rules, the files read, and all diagnostics."""

    rules: list[CompiledRule] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def raise_on_error(self) -> RuleSet:
        """Raise RulepassError when any error was found; return self otherwise."""
        if self.errors:
            raise RulepassError(self.errors)
        return self

    def by_name(self) -> dict[str, CompiledRule]:
        """The rules by pass name."""
        return {r.name: r for r in self.rules}


def _shown(p: Path) -> Path:
    """`p` relative to the working directory when it lies below it (diagnostics stay short)."""
    try:
        return p.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):  # not below it, or the working directory was removed
        return p


def rule_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Expand files and folders into rule files (sorted, fixtures excluded); missing paths are errors."""
    out: list[Path] = []
    diags: list[Diagnostic] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(
                f
                for f in p.rglob("*")
                if f.suffix in RULE_SUFFIXES and f.is_file() and "fixtures" not in f.relative_to(p).parts
            )
            if not found:
                diags.append(Diagnostic("io", f"folder '{p}' holds no rule files (*.yaml)", where=str(p)))
            out.extend(_shown(f) for f in found)
        elif p.exists():
            out.append(_shown(p))
        else:
            diags.append(Diagnostic("io", f"rule file '{p}' does not exist", where=str(p)))
    return out, diags


def load_rules(
    paths: Sequence[str | Path],
    catalogue: Catalogue,
    *,
    known_passes: Iterable[str] = (),
    step_limit: int = DEFAULT_STEP_LIMIT,
    generate: bool = True,
) -> RuleSet:
    """Read, check and compile the rules of `paths` (files or folders) against `catalogue`; `generate`: also
    generate each rule's decision function when first used (the engine's fast path; checking needs none)."""
    files, diags = rule_files(paths)
    store = Store.open()
    return _load(files, [_read(f) for f in files], diags, catalogue, known_passes, step_limit, generate, store)


def load_rules_from(
    sources: Sequence[tuple[str, bytes]],
    catalogue: Catalogue,
    *,
    known_passes: Iterable[str] = (),
    step_limit: int = DEFAULT_STEP_LIMIT,
) -> RuleSet:
    """`load_rules` for rule files given as (name, bytes), read elsewhere (e.g. by the process that sends a rule set
    to workers of a corpus run, which may not share its files)."""
    files = [Path(name) for name, _ in sources]
    raws: list[bytes | RulepassError] = [raw for _, raw in sources]
    return _load(files, raws, [], catalogue, known_passes, step_limit, True, Store.open())


def validate_rules(
    paths: Sequence[str | Path],
    catalogue: Catalogue,
    *,
    known_passes: Iterable[str] = (),
    texts: Mapping[Path, bytes] | None = None,
) -> Validation:
    """Check the rules of `paths` as `load_rules` does, without generating code, and analyse them
    (:mod:`.analyse`: constant conditions, unreachable checks, write conflicts, order hazards; `known_passes`
    are taken to run in the order given); the outcome of files read before with the same bytes, catalogue and
    code comes from the cache (identical to checking them again). `texts`: the content of some files by
    resolved path, read instead of the disk (an editor's unsaved buffers)."""
    files, diags = rule_files(paths)
    store = Store.open()
    given = texts or {}
    raws: list[bytes | RulepassError] = [given[f.resolve()] if f.resolve() in given else _read(f) for f in files]
    known_passes = tuple(known_passes)
    key = None
    if store is not None and not diags and all(isinstance(r, bytes) for r in raws):
        key = "set-" + digest(
            code_digest(),
            catalogue_digest(catalogue),
            json.dumps(known_passes),
            *(p for f, raw in zip(files, raws, strict=True) for p in (str(f), digest(cast(bytes, raw)))),
        )
        hit = decode_validation(store.get(key), [str(f) for f in files], cast(list[bytes], raws))
        if hit is not None:
            return hit
    rs = _load(files, raws, diags, catalogue, known_passes, DEFAULT_STEP_LIMIT, False, store, analysed=True)
    found = Validation(rs.files, [r.name for r in rs.rules], rs.diagnostics)
    if store is not None and key is not None:
        data = encode_validation(found, dict(zip(rs.files, cast(list[bytes], raws), strict=True)))
        if data is not None:
            store.put(key, data)
    return found


def _read(path: Path) -> bytes | RulepassError:
    """The bytes of a rule file, or the error reading it."""
    try:
        return read_bytes(path, what="rule file", max_bytes=MAX_RULE_FILE_BYTES)
    except RulepassError as exc:
        return exc


def _load(
    files: list[Path],
    raws: list[bytes | RulepassError],
    diags: list[Diagnostic],
    catalogue: Catalogue,
    known_passes: Iterable[str],
    step_limit: int,
    generate: bool,
    store: Store | None,
    *,
    analysed: bool = False,
) -> RuleSet:
    result = RuleSet(files=[str(f) for f in files], diagnostics=diags)
    models: list[RuleFile] = []
    parsed: Parsed = {}  # the ASTs by expression text, shared by the files (as parsing shares them)
    for f, raw in zip(files, raws, strict=True):
        model, file_diags = read_rule_bytes(f, raw, parsed, store)
        result.diagnostics.extend(file_diags)
        if model is not None:
            models.append(model)
    all_rules, shared_diags = resolve_shared(models)
    result.diagnostics.extend(shared_diags)
    checked = []
    # a problem inside a shared check is found once for every rule that uses it (it is checked in each rule's
    # scope): report it once, naming those rules
    shared_at: dict[Diagnostic, tuple[int, list[str]]] = {}
    for r in all_rules:
        res, rule_diags = check_rule(r, catalogue)
        for d in rule_diags:
            if d.span is None or d.span.file == r.file:
                result.diagnostics.append(d)
            elif d in shared_at:
                shared_at[d][1].append(r.name)
            else:
                shared_at[d] = (len(result.diagnostics), [r.name])
                result.diagnostics.append(d)
        checked.append((r, res, any(d.severity == "error" for d in rule_diags)))
    for d, (at, users) in shared_at.items():
        context = f"found checking the rule(s) that use this shared check: {', '.join(users)}"
        result.diagnostics[at] = replace(d, hint=f"{d.hint} ({context})" if d.hint else context)
    result.diagnostics.extend(check_rule_set(all_rules, known_passes))
    if analysed and not any(d.severity == "error" for d in result.diagnostics):
        result.diagnostics.extend(analyse([Analysed(r, res) for r, res, _ in checked], tuple(known_passes)))
    for r, res, bad in checked:
        if not bad:
            result.rules.append(compile_rule(r, res, step_limit=step_limit, generate=generate))
    return result
