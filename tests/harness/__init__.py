"""Tests of refinterp.harness."""
