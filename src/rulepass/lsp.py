"""`rulepass lsp`: a language server for rule files, over stdio, on pygls.

A front-end like the command line: it only translates between the Language Server Protocol and
:mod:`.lsp_analysis` (which knows the rule language). Diagnostics are published when a rule file is opened,
changed or saved, for every open file of its rule set (an edit of a shared check can break the rules that use
it); hover, completion and go-to-definition answer from the last analysis of the rule set that read cleanly, so
they keep working while the text being typed is incomplete. pygls (`rulepass[lsp]`) is imported only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from . import __version__
from .base.diagnostics import Diagnostic, Span
from .lsp_analysis import (
    Analysis,
    Item,
    analyse,
    completions,
    definition,
    fixture_completions,
    fixture_rule_file,
    hover,
    is_rule_text,
    rule_set_paths,
    rule_set_roots,
)
from .lsp_analysis import validate as validate_set

_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}
_KIND = {
    "field": lsp.CompletionItemKind.Field,
    "helper": lsp.CompletionItemKind.Function,
    "variable": lsp.CompletionItemKind.Variable,
    "keyword": lsp.CompletionItemKind.Keyword,
    "check": lsp.CompletionItemKind.Reference,
    "rule": lsp.CompletionItemKind.Class,
    "key": lsp.CompletionItemKind.Property,
}


class RuleServer(LanguageServer):
    """The rule-file language server: the open rule files and the last clean analysis of each rule set."""

    def __init__(self) -> None:
        super().__init__("rulepass", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.analyses: dict[tuple[Path, ...], Analysis] = {}  # by the rule set's roots (see `rule_set_roots`)

    def open_texts(self) -> dict[Path, str]:
        """The text of every open rule file, by resolved path."""
        out: dict[Path, str] = {}
        for uri, doc in self.workspace.text_documents.items():
            path = _path(uri)
            if path is not None and is_rule_text(path, doc.source):
                out[path] = doc.source
        return out

    def refresh(self, uri: str) -> None:
        """Validate the rule set of the file at `uri` and publish the diagnostics of its open files; keep the
        analysis when every file of the set read cleanly."""
        path = _path(uri)
        doc = self.workspace.get_text_document(uri)
        if path is None or not is_rule_text(path, doc.source):
            return
        texts = self.open_texts()
        roots = rule_set_roots(path)
        files = rule_set_paths(roots, path)
        found = validate_set(roots, path, texts)
        for p in texts:
            if p in files:
                other = self.workspace.get_text_document(from_fs_path(str(p)) or uri)
                diags = [_diagnostic(d, other) for d in found.get(p, [])]
                self.text_document_publish_diagnostics(
                    lsp.PublishDiagnosticsParams(uri=other.uri, diagnostics=diags, version=other.version)
                )
        if not any(d.severity == "error" for d in found.get(path, [])):
            self.analyses[roots] = analyse(files, texts)

    def analysis(self, path: Path) -> Analysis:
        """The last clean analysis of the rule set of the rule file `path`."""
        roots = rule_set_roots(path)
        if roots not in self.analyses:
            self.analyses[roots] = analyse(rule_set_paths(roots, path), self.open_texts())
        return self.analyses[roots]


def _path(uri: str) -> Path | None:
    """The resolved path of a `file:` URI (None for an unsaved, untitled buffer: it has no rule set)."""
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(fs).resolve() if fs else None


def _range(span: Span, doc: TextDocument | None) -> lsp.Range:
    """A span (1-based, inclusive end, in characters) as a protocol range in the client's code units."""
    start = lsp.Position(max(span.line - 1, 0), max(span.col - 1, 0))
    end = lsp.Position(max(span.end_line - 1, 0), max(span.end_col, 0))
    r = lsp.Range(start, end)
    return doc.position_codec.range_to_client_units(doc.lines, r) if doc is not None else r


def _diagnostic(d: Diagnostic, doc: TextDocument) -> lsp.Diagnostic:
    span = d.span or Span(doc.path, 1, 1, 1, 1)
    message = d.message + (f"\nhelp: {d.hint}" if d.hint else "")
    return lsp.Diagnostic(_range(span, doc), message, severity=_SEVERITY[d.severity], code=d.code, source="rulepass")


def _item(i: Item) -> lsp.CompletionItem:
    doc = lsp.MarkupContent(lsp.MarkupKind.Markdown, i.doc) if i.doc else None
    return lsp.CompletionItem(i.label, kind=_KIND[i.kind], detail=i.detail or None, documentation=doc)


def build_server() -> RuleServer:
    """The server with its features registered."""
    server = RuleServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        server.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        server.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        server.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(params: lsp.HoverParams) -> lsp.Hover | None:
        found = _at(server, params.text_document.uri, params.position)
        h = hover(*found[:-1]) if found is not None else None
        if found is None or h is None:
            return None
        content = lsp.MarkupContent(lsp.MarkupKind.Markdown, h.text)
        return lsp.Hover(content, _range(h.span, found[-1]) if h.span is not None else None)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", " "]))
    def on_completion(params: lsp.CompletionParams) -> lsp.CompletionList:
        found = _at(server, params.text_document.uri, params.position)
        items = []
        if found is not None:
            analysis, path, lines, line, col, doc = found
            tested = fixture_rule_file(path, doc.source)
            if tested is not None:
                items = fixture_completions(analysis, tested, lines, line, col)
            else:
                items = completions(analysis, path, lines, line, col)
        return lsp.CompletionList(is_incomplete=False, items=[_item(i) for i in items])

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(params: lsp.DefinitionParams) -> lsp.Location | None:
        found = _at(server, params.text_document.uri, params.position)
        span = definition(*found[:-1]) if found is not None else None
        if found is None or span is None:
            return None
        uri = from_fs_path(span.file) or found[-1].uri
        return lsp.Location(uri, _range(span, server.workspace.get_text_document(uri)))

    return server


def _at(
    server: RuleServer, uri: str, position: lsp.Position
) -> tuple[Analysis, Path, Sequence[str], int, int, TextDocument] | None:
    """What a request at `position` of `uri` is answered from: the analysis (a fixture's: its tested rule file's),
    the document's path and lines, the 0-based line and character (not the client's code units) and the
    document."""
    doc = server.workspace.get_text_document(uri)
    path = _path(uri)
    if path is None:
        return None
    rules = path if is_rule_text(path, doc.source) else fixture_rule_file(path, doc.source)
    if rules is None:
        return None
    pos = doc.position_codec.position_from_client_units(doc.lines, position)
    return server.analysis(rules), path, doc.lines, pos.line, pos.character, doc


def serve() -> None:
    """Run the server on stdin and stdout until the client says exit."""
    build_server().start_io()
