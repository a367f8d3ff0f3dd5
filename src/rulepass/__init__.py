"""rulepass: a declarative, rule-based graph optimizer for Ascend GE's no-task optimizations.

The public face for compile scripts lives in :mod:`rulepass.api`; the command line in :mod:`rulepass.cli`.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
