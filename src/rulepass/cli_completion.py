"""`rulepass completion bash|zsh|fish`: a shell completion script, written from the argument parser itself.

The script is static: completing runs no Python (argcomplete would start rulepass on every Tab) and needs no
package in the shell's environment. It knows every command and subcommand, each one's options, the values of
options and arguments with fixed choices (`--level O0..O3`, `--format`, `schema KIND`), and leaves file names to
the shell elsewhere. Made from `build_parser()`, it cannot miss a command; after an upgrade, write it again.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

SHELLS = ("bash", "zsh", "fish")


def add_parser(sub: argparse._SubParsersAction[Any], root: argparse.ArgumentParser) -> None:
    """Register `rulepass completion`, which completes the commands of `root`."""
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description='Print the completion script of a shell. bash: `eval "$(rulepass completion bash)"` in '
        "~/.bashrc; zsh: the same with zsh in ~/.zshrc; fish: `rulepass completion fish > "
        "~/.config/fish/completions/rulepass.fish`.",
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(handler=run, completion_root=root)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the script for `args.shell`."""
    commands = list(walk(args.completion_root))
    out.write({"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell](commands))
    return 0


@dataclass
class Option:
    """An option: its spellings, whether it takes a value, the values it accepts (if fixed), its help."""

    names: list[str]
    takes_value: bool
    choices: list[str]
    help: str


@dataclass
class Command:
    """A command's words (`()` for rulepass itself, `("graph", "check")`), options, subcommands and the fixed
    choices of its positional argument."""

    words: tuple[str, ...]
    help: str = ""
    options: list[Option] = field(default_factory=list)
    subcommands: dict[str, str] = field(default_factory=dict)  # name -> help
    choices: list[str] = field(default_factory=list)


def walk(parser: argparse.ArgumentParser, words: tuple[str, ...] = (), help: str = "") -> Iterator[Command]:
    """Every command of `parser`, itself first."""
    cmd = Command(words, help)
    nested: list[tuple[str, argparse.ArgumentParser, str]] = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in a._choices_actions}
            for name, p in a.choices.items():
                cmd.subcommands[name] = helps.get(name, "")
                nested.append((name, p, helps.get(name, "")))
        elif a.option_strings:
            choices = [str(c) for c in a.choices] if a.choices else []
            cmd.options.append(Option(list(a.option_strings), a.nargs != 0, choices, a.help or ""))
        elif a.choices:
            cmd.choices += [str(c) for c in a.choices]
    yield cmd
    for name, p, h in nested:
        yield from walk(p, (*words, name), h)


def _words(items: Any) -> str:
    return shlex.quote(" ".join(items))


def bash_script(commands: list[Command]) -> str:
    """The bash completion function, registered for `rulepass`."""
    paths = " | ".join(shlex.quote(" " + " ".join(c.words)) for c in commands if c.words)
    per_command, values = [], []
    for c in commands:
        path = " " + " ".join(c.words) if c.words else ""
        opts = [n for o in c.options for n in o.names]
        words = _words([*c.subcommands, *c.choices])
        per_command.append(f"        {shlex.quote(path)}) opts={_words(opts)}; cands={words};;")
        for o in (o for o in c.options if o.takes_value):
            pattern = "|".join(shlex.quote(f"{path}|{n}") for n in o.names)
            # fixed values, or a free one: the shell's default (file names)
            reply = f'COMPREPLY=($(compgen -W {_words(o.choices)} -- "$cur")); ' if o.choices else ""
            values.append(f"        {pattern}) {reply}return;;")
    return _BASH.format(paths=paths, commands="\n".join(per_command), values="\n".join(values))


_BASH = """# rulepass completion for bash (written by `rulepass completion bash`)
_rulepass() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" cmd="" opts="" cands="" i
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "$cmd ${{COMP_WORDS[i]}}" in
            {paths}) cmd="$cmd ${{COMP_WORDS[i]}}";;
        esac
    done
    case "$cmd|$prev" in
{values}
    esac
    case "$cmd" in
{commands}
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ -n "$cands" ]]; then
        COMPREPLY=($(compgen -W "$cands" -- "$cur"))
    fi
}}
complete -o default -F _rulepass rulepass
"""


def zsh_script(commands: list[Command]) -> str:
    """zsh runs the bash function through its bash-completion layer (bashcompinit)."""
    return (
        "# rulepass completion for zsh (written by `rulepass completion zsh`; eval it in ~/.zshrc)\n"
        "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(commands).split("\n", 1)[1]
    )


def _fish_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_script(commands: list[Command]) -> str:
    """`complete` lines: commands where no command is yet given, each command's options and values after it."""
    lines = ["# rulepass completion for fish (written by `rulepass completion fish`)", "complete -c rulepass -f"]
    for c in commands:
        if not c.words:
            cond = "__fish_use_subcommand"
        else:
            seen = "; and ".join(f"__fish_seen_subcommand_from {w}" for w in c.words)
            cond = seen + ("; and not __fish_seen_subcommand_from " + " ".join(c.subcommands) if c.subcommands else "")
        for name, h in c.subcommands.items():
            lines.append(f"complete -c rulepass -n {_fish_text(cond)} -a {name} -d {_fish_text(h)}")
        if c.choices:
            lines.append(f"complete -c rulepass -n {_fish_text(cond)} -a {_fish_text(' '.join(c.choices))}")
        elif c.words and not c.subcommands:
            lines.append(f"complete -c rulepass -n {_fish_text(cond)} -F")  # file arguments
        for o in c.options:
            spell = " ".join(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}" for n in o.names)
            value = f" -x -a {_fish_text(' '.join(o.choices))}" if o.choices else (" -r -F" if o.takes_value else "")
            lines.append(f"complete -c rulepass -n {_fish_text(cond)} {spell}{value} -d {_fish_text(o.help)}")
    return "\n".join(lines) + "\n"
