"""Rule files in, checked and compiled rules out: the one entry point of the rule language.

`load_rules` reads files or folders (every `*.yaml`/`*.yml` not under a `fixtures` folder), collects every
diagnostic of every file (YAML, schema, expression syntax, names, types, unused bindings, duplicates, order
constraints) and compiles the rules that are sound. Callers decide whether warnings matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..base.diagnostics import Diagnostic, RulepassError
from .catalogue import Catalogue
from .check import Resolution, check_rule, check_rule_set
from .codegen import generate_rule
from .compile import DEFAULT_STEP_LIMIT, CompiledRule, compile_closures
from .rules import Rule, RuleFile, read_rule_file, resolve_shared

RULE_SUFFIXES = (".yaml", ".yml")


def compile_rule(
    rule: Rule, res: Resolution, *, step_limit: int = DEFAULT_STEP_LIMIT, generate: bool = True
) -> CompiledRule:
    """Compile a checked rule into closures and, unless `generate` is false, its generated decision function
    (built on the closures' compiled checks, so it lives above both modules)."""
    out = compile_closures(rule, res, step_limit=step_limit)
    if generate:
        out.fast = generate_rule(out)
    return out


@dataclass
class RuleSet:
    """The outcome of loading rule files: compiled rules, the files read, and all diagnostics."""

    rules: list[CompiledRule] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics that are errors."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        """The diagnostics that are warnings."""
        return [d for d in self.diagnostics if d.severity == "warning"]

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
) -> RuleSet:
    """Read, check and compile the rules of `paths` (files or folders) against `catalogue`."""
    files, diags = rule_files(paths)
    result = RuleSet(files=[str(f) for f in files], diagnostics=diags)
    models: list[RuleFile] = []
    for f in files:
        model, file_diags = read_rule_file(f)
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
    for r, res, bad in checked:
        if not bad:
            result.rules.append(compile_rule(r, res, step_limit=step_limit))
    return result
