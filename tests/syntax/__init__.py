"""Tests of refinterp.syntax."""
