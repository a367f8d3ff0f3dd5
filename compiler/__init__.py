"""Subpackage of rulepass."""
