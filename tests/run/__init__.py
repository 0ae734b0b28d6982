"""Tests of refinterp.run."""
