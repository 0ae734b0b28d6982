"""Tests of refinterp.language."""
