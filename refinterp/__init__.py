"""refinterp: the reference interpreter and reference-semantics oracle for SkriptND (NNEF 2.0)."""

__version__ = "0.1.0"
