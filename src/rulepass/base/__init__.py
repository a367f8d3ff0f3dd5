"""The foundation every layer uses: sources and spans, diagnostics and their rendering, JSON Schema validation,
the span-keeping safe YAML/JSON loader, and file I/O (bounded reads, atomic outputs). It knows no rule and no
graph; nothing in it imports from `dsl`, `engine` or `compiler`.
"""
