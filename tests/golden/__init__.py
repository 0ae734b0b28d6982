"""Tests of refinterp.golden."""
