"""`rulepass lsp`: start the language server for rule files (see docs/editor.md)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register `rulepass lsp`."""
    p = sub.add_parser(
        "lsp",
        help="language server for rule files, over stdio (needs rulepass[lsp]; see docs/editor.md)",
        description="Speak the Language Server Protocol on stdin/stdout: diagnostics as you type (what `validate` "
        "reports), hover docs, completion and go-to-definition in rule files. Started by an editor, not by hand.",
    )
    p.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only transport)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve until the editor says exit."""
    from .base.diagnostics import error

    try:
        from .lsp import serve
    except ImportError as exc:
        raise error("usage", f"the language server needs pygls: pip install 'rulepass[lsp]' ({exc})") from None
    serve()
    return 0
