"""Test helpers shared by spec_tests/ and tests/ (independent of refinterp: they never import
it)."""
