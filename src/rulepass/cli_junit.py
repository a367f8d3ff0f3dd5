"""The reports of `rulepass test --format json|junit`: fixture cases for CI, as JSON or as JUnit XML.

The JUnit XML has the shape CI systems read (Jenkins' junit schema, as GitLab, GitHub Actions reporters and
pytest's `--junitxml` write it): `<testsuites>` holding one `<testsuite name tests failures errors>` per fixture
file, a `<testcase classname name>` per case, a failed case carrying `<failure message>`, and the problems that
are no case (a path without fixtures, a rule set that does not load) as `<error>` cases of a suite `rulepass`.
No times are written: the same fixtures give the same report, byte for byte. Control characters (which XML 1.0
cannot hold) are escaped as the terminal output escapes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree as ET

from .base.diagnostics import Diagnostic, printable


def fixtures_json(results: Sequence[Any], diags: Sequence[Diagnostic]) -> str:
    """The cases and diagnostics of a fixture run as one JSON document."""
    failed = sum(1 for r in results if not r.ok)
    doc = {
        "passed": len(results) - failed,
        "failed": failed,
        "cases": [
            {"fixture": r.fixture, "case": r.node, "ok": r.ok, "message": None if r.ok else r.message} for r in results
        ],
        "diagnostics": [d.to_json() for d in diags],
    }
    return json.dumps(doc, indent=1) + "\n"


def fixtures_junit(results: Sequence[Any], diags: Sequence[Diagnostic]) -> str:
    """The cases and diagnostics of a fixture run as JUnit XML."""
    root = ET.Element("testsuites", name="rulepass test")
    suites: dict[str, list[Any]] = {}
    for r in results:
        suites.setdefault(r.fixture, []).append(r)
    for name, cases in suites.items():
        suite = ET.SubElement(
            root, "testsuite", name=printable(name), tests=str(len(cases)), failures=str(sum(not c.ok for c in cases))
        )
        suite.set("errors", "0")
        suite.set("skipped", "0")
        for c in cases:
            case = ET.SubElement(suite, "testcase", classname=printable(name), name=printable(c.node))
            if not c.ok:
                message = printable(c.message, keep_newlines=True)
                ET.SubElement(case, "failure", message=message, type="mismatch").text = f"{printable(c.id)}\n{message}"
    if diags:
        suite = ET.SubElement(root, "testsuite", name="rulepass", tests=str(len(diags)), failures="0")
        suite.set("errors", str(len(diags)))
        suite.set("skipped", "0")
        for k, d in enumerate(diags):
            case = ET.SubElement(suite, "testcase", classname="rulepass", name=f"diagnostic {k + 1}")
            ET.SubElement(case, "error", message=d.headline(), type=d.code).text = d.render()
    failures = sum(not r.ok for r in results)
    root.set("tests", str(len(results) + len(diags)))
    root.set("failures", str(failures))
    root.set("errors", str(len(diags)))
    ET.indent(root, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
