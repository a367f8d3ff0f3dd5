"""The sections of benchmarks/run.py, one module a section, and what they share (`common`).

`common` holds the paths, the machine record and the measuring and formatting helpers; each section module
measures (`bench_*`) and renders (`render_*`) its own table and carries the text the page shows above it;
`workers` is what the scale and work sections run in their subprocesses; `document` assembles
docs/benchmarks.md from benchmarks/results.json. The modules import the other benchmark scripts by name
(`synthetic`, `handwritten_concat`, ...): benchmarks/ must be on `sys.path`, as run.py and tests/conftest.py put it.
"""
