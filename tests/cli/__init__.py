"""Tests of refinterp.cli."""
