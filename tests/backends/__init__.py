"""Tests of refinterp.backends."""
