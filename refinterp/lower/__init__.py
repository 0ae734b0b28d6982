"""@lower: the analysis shared by the engines (plan) and, later, the scalar and vector engines."""
