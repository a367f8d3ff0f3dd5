"""Build the planner's optional native inner loops (compiler/memory/_native.c).

Everything else is configured in pyproject.toml. The extension is optional: without a C compiler (or if its
build fails) ``pip install`` still succeeds and the planner runs its pure-Python loops, with the same plans.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "rulepass.compiler.memory._native",
            sources=["compiler/memory/_native.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
