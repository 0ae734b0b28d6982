"""Tests of refinterp.lower."""
