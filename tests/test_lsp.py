"""`rulepass lsp` through the protocol: the server started as `python -m rulepass lsp` over stdio, driven by
pygls's client (initialize, didOpen/didChange, hover, completion, definition), the answers asserted.

One server serves every test of the module (starting one costs an interpreter and the rule language's imports);
each test opens its own copy of the bundled rules in a folder of its own.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0


class Session:
    """A client talking to one server process, with the diagnostics it published by URI."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = LanguageClient("rulepass-test", "1")
        self.published: dict[str, list[lsp.Diagnostic]] = {}
        self.arrived = asyncio.Event()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: lsp.PublishDiagnosticsParams) -> None:
            self.published[params.uri] = params.diagnostics
            self.arrived.set()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))

    def start(self) -> None:
        self.run(self.client.start_io(sys.executable, "-m", "rulepass", "lsp"))
        params = lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=None)
        result = self.run(self.client.initialize_async(params))
        assert result.server_info is not None and result.server_info.name == "rulepass"
        self.client.initialized(lsp.InitializedParams())

    def stop(self) -> None:
        self.run(self.client.shutdown_async(None))
        self.client.exit(None)
        self.run(self.client.stop())
        self.loop.close()

    def diagnostics(self, uri: str, send: Any) -> list[lsp.Diagnostic]:
        """Send a notification and wait for the diagnostics of `uri` it makes the server publish."""

        async def wait() -> list[lsp.Diagnostic]:
            self.published.pop(uri, None)
            send()
            while uri not in self.published:
                self.arrived.clear()
                await self.arrived.wait()
            return self.published[uri]

        return list(self.run(wait()))

    def open(self, path: Path, text: str | None = None) -> list[lsp.Diagnostic]:
        uri = from_fs_path(str(path))
        assert uri is not None
        item = lsp.TextDocumentItem(uri, "yaml", 1, text if text is not None else path.read_text(encoding="utf-8"))
        params = lsp.DidOpenTextDocumentParams(item)
        return self.diagnostics(uri, lambda: self.client.text_document_did_open(params))

    def change(self, path: Path, text: str, version: int) -> list[lsp.Diagnostic]:
        uri = from_fs_path(str(path))
        assert uri is not None
        change = lsp.TextDocumentContentChangeWholeDocument(text=text)
        params = lsp.DidChangeTextDocumentParams(lsp.VersionedTextDocumentIdentifier(version, uri), [change])
        return self.diagnostics(uri, lambda: self.client.text_document_did_change(params))

    def doc_pos(self, path: Path, needle: str, offset: int = 0) -> lsp.TextDocumentPositionParams:
        """The position of `needle` (plus `offset` characters) in the file, as the client's request names it."""
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if needle in line:
                uri = from_fs_path(str(path))
                assert uri is not None
                return lsp.TextDocumentPositionParams(
                    lsp.TextDocumentIdentifier(uri), lsp.Position(n, line.index(needle) + offset)
                )
        raise AssertionError(f"{needle!r} not in {path}")

    def hover(self, path: Path, needle: str, offset: int = 0) -> str | None:
        p = self.doc_pos(path, needle, offset)
        got = self.run(self.client.text_document_hover_async(lsp.HoverParams(p.text_document, p.position)))
        if got is None:
            return None
        assert isinstance(got.contents, lsp.MarkupContent)
        return got.contents.value

    def complete(self, path: Path, needle: str, offset: int) -> list[lsp.CompletionItem]:
        p = self.doc_pos(path, needle, offset)
        got = self.run(self.client.text_document_completion_async(lsp.CompletionParams(p.text_document, p.position)))
        assert isinstance(got, lsp.CompletionList)
        return got.items


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    s = Session()
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    """A copy of the bundled rules (without fixtures) in a folder of the test's own."""
    folder = tmp_path / "rules"
    folder.mkdir()
    for f in (ROOT / "rules").glob("*.yaml"):
        shutil.copy(f, folder / f.name)
    return folder


def test_diagnostics_as_you_type(session: Session, rules: Path) -> None:
    """A clean file publishes no diagnostic; a misspelt field is the located error `validate` reports, with its
    hint; fixing it clears it."""
    concat = rules / "notask_base.yaml"  # where the shared expressions live
    text = concat.read_text(encoding="utf-8")
    assert session.open(concat) == []
    bad = text.replace("node.input_descs[0].origin_rank", "node.input_descs[0].origin_rnak", 1)
    assert bad != text
    diags = session.change(concat, bad, 2)
    assert len(diags) == 1
    d = diags[0]
    assert d.severity == lsp.DiagnosticSeverity.Error and d.code == "unknown-field" and d.source == "rulepass"
    assert "origin_rnak" in d.message and "did you mean 'origin_rank'" in d.message
    line = bad.splitlines()[d.range.start.line]
    assert line[d.range.start.character : d.range.end.character] == "origin_rnak"
    assert session.change(concat, text, 3) == []


def test_an_unknown_use_target_and_a_yaml_error(session: Session, rules: Path) -> None:
    """The set is the file's folder: a `use` of a shared check no file defines is an error at the name; a file
    that is not YAML is one located error."""
    pack = rules / "pack_notask.yaml"
    text = pack.read_text(encoding="utf-8")
    diags = session.open(pack, text.replace("{use: InputCheck,", "{use: InputChek,", 1))
    assert [d.code for d in diags if d.severity == lsp.DiagnosticSeverity.Error] == ["unknown-shared-check"] or any(
        "InputChek" in d.message for d in diags
    )
    assert any("InputChek" in d.message for d in diags)
    diags = session.change(pack, "rules: [\n", 2)
    assert len(diags) == 1 and diags[0].severity == lsp.DiagnosticSeverity.Error


def test_hover(session: Session, rules: Path) -> None:
    """Hover shows what the checker resolved: a field with its owner type and doc, a helper's signature, a root
    binding, a let binding, a shared check at its `use`, a key's schema description."""
    concat = rules / "concat_notask.yaml"
    base = rules / "notask_base.yaml"
    session.open(concat)
    session.open(base)
    field = session.hover(base, "origin_rank", 2)
    assert field is not None and "TensorDesc.origin_rank: int" in field
    helper = session.hover(base, "attr_int(", 1)
    assert helper is not None and "attr_int(" in helper and "->" in helper
    root = session.hover(base, "when: graph.is_single_op_scene", len("when: g"))
    assert root is not None and "graph: Graph" in root
    use = session.hover(concat, "use: InputCheck", len("use: I"))
    assert use is not None and "InputCheck" in use and "shared check" in use and "notask_base.yaml" in use
    key = session.hover(base, "skip_graph:", 2)
    assert key is not None and "Graph-level exclusions" in key
    let = session.hover(base, "reject_if: src in earlier(src)", len("reject_if: s"))
    assert let is not None and "ref_source(i.peer)" in let
    assert session.hover(base, "# ShouldSkipGraph", 4) is None


def test_completion(session: Session, rules: Path) -> None:
    """Fields of the receiver's type after a `.`, shared checks after `use:`, passes in `after`/`before`, names
    and helpers in an expression."""
    concat = rules / "concat_notask.yaml"
    base = rules / "notask_base.yaml"
    text = base.read_text(encoding="utf-8")
    session.open(concat)
    session.open(base)
    typed = text.replace("when: graph.is_single_op_scene", "when: graph.", 1)
    session.change(base, typed, 2)
    base.write_text(typed, encoding="utf-8")  # where the test looks the position up
    items = {i.label: i for i in session.complete(base, "when: graph.", len("when: graph."))}
    assert {"is_single_op_scene", "unknown_shape", "name", "is_root"} <= set(items)
    assert "input_descs" not in items  # a Node's field, not a Graph's
    assert items["unknown_shape"].kind == lsp.CompletionItemKind.Field
    assert items["unknown_shape"].detail == "Graph.unknown_shape: bool"
    chain = {i.label for i in session.complete(base, "node.input_descs[0].origin_rank", len("node.input_descs[0]."))}
    assert {"origin_rank", "dtype", "shape"} <= chain and "is_root" not in chain
    uses = {i.label for i in session.complete(concat, "{use: InputCheck", len("{use: "))}
    assert {"InputCheck", "CheckDim", "IsUnknownShapeOp", "OutputCheck"} <= uses
    passes = {i.label for i in session.complete(concat, "after: [ParallelGroupPass]", len("after: ["))}
    assert {"ConcatNotaskPass", "PackNotaskPass", "SplitNotaskPass"} <= passes
    names = {i.label for i in session.complete(base, "raw_dim: node.attr_int", len("raw_dim: "))}
    assert {"node", "graph", "len", "shape_size", "any", "raw_dim", "dim"} <= names


def test_definition(session: Session, rules: Path) -> None:
    """`use: NAME` goes to the shared check in notask_base.yaml; a pass in `before` to its rule; a let read in an
    expression to its binding."""
    concat = rules / "concat_notask.yaml"
    base = rules / "notask_base.yaml"
    session.open(concat)
    p = session.doc_pos(concat, "{use: CheckDim", len("{use: C"))
    loc = session.run(session.client.text_document_definition_async(lsp.DefinitionParams(p.text_document, p.position)))
    assert isinstance(loc, lsp.Location) and loc.uri == from_fs_path(str(base))
    line = base.read_text(encoding="utf-8").splitlines()[loc.range.start.line]
    assert line[loc.range.start.character : loc.range.end.character] == "CheckDim"
    p = session.doc_pos(concat, "before: [PackNotaskPass]", len("before: [P"))
    loc = session.run(session.client.text_document_definition_async(lsp.DefinitionParams(p.text_document, p.position)))
    assert isinstance(loc, lsp.Location) and loc.uri == from_fs_path(str(rules / "pack_notask.yaml"))
    session.open(base)
    p = session.doc_pos(base, 'dim: "if raw_dim < 0', len('dim: "if r'))
    loc = session.run(session.client.text_document_definition_async(lsp.DefinitionParams(p.text_document, p.position)))
    assert isinstance(loc, lsp.Location) and loc.uri == from_fs_path(str(base))
    line = base.read_text(encoding="utf-8").splitlines()[loc.range.start.line]
    assert line.strip().startswith("raw_dim: node.attr_int")


def test_the_settings_rule_set_and_nested_check_names(session: Session, tmp_path: Path) -> None:
    """With `rules = ["common", "mine"]` in rulepass.toml, a rule of `mine/` is checked with the shared checks of
    `common/` (alone, its folder would not know them) and `use:` goes there; a nested check's name hovers."""
    (tmp_path / "common").mkdir()
    (tmp_path / "mine").mkdir()
    for f in (ROOT / "rules").glob("*.yaml"):
        shutil.copy(f, tmp_path / ("common" if f.name == "notask_base.yaml" else "mine") / f.name)
    (tmp_path / "rulepass.toml").write_text('rules = ["common", "mine"]\n', encoding="utf-8")
    concat = tmp_path / "mine" / "concat_notask.yaml"
    assert session.open(concat) == []
    p = session.doc_pos(concat, "{use: InputCheck", len("{use: I"))
    loc = session.run(session.client.text_document_definition_async(lsp.DefinitionParams(p.text_document, p.position)))
    assert isinstance(loc, lsp.Location) and loc.uri == from_fs_path(str(tmp_path / "common" / "notask_base.yaml"))
    base = tmp_path / "common" / "notask_base.yaml"
    session.open(base)
    nested = session.hover(base, "- name: HasSameSourceAnchor", len("- name: H"))
    assert nested is not None and "No input traces back to the same output" in nested


def test_check_names_in_a_fixture(session: Session, rules: Path) -> None:
    """In a fixture's `expect:`, a node's expectation completes to `fired` and the checks of the tested rule file
    (shared ones it uses and nested ones too); a check name there hovers and goes to its definition."""
    folder = rules / "fixtures" / "concat_notask"
    folder.mkdir(parents=True)
    fixture = folder / "input_lock.yaml"
    shutil.copy(ROOT / "rules" / "fixtures" / "concat_notask" / "input_lock.yaml", fixture)
    uri = from_fs_path(str(fixture))
    assert uri is not None
    item = lsp.TextDocumentItem(uri, "yaml", 1, fixture.read_text(encoding="utf-8"))
    session.client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
    names = {i.label for i in session.complete(fixture, "  unlocked: fired", len("  unlocked: "))}
    assert {"fired", "IsPreOutAnchorCanReuse", "InputCheck", "CheckDim", "SingleOpScene", "actions"} <= names
    assert "IsPreOutAnchorCanReuse" in {
        i.label for i in session.complete(fixture, "locked: {check: IsPre", len("locked: {check: "))
    }
    assert not session.complete(fixture, "  - {name: a1", len("  - {name: "))  # not in `expect:`
    text = session.hover(fixture, "check: IsPreOutAnchorCanReuse", len("check: I"))
    assert text is not None and "producer-lock attribute" in text
    p = session.doc_pos(fixture, "check: IsPreOutAnchorCanReuse", len("check: I"))
    loc = session.run(session.client.text_document_definition_async(lsp.DefinitionParams(p.text_document, p.position)))
    assert isinstance(loc, lsp.Location) and loc.uri == from_fs_path(str(rules / "notask_base.yaml"))
