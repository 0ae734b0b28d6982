"""Tests of refinterp.numeric."""
