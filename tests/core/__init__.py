"""Tests of refinterp.core."""
