"""Programs of the spec text shared by several spec tests (spec §2.12: matmul with an optional
initial value Z)."""

from __future__ import annotations


MATMUL_Z = """operator matmul {
  @input { A: real[m,k]; B: real[k,n]; Z: optional real[m,n]; }
  @output { C: real[m,n]; }
  @lower {
     C[i,j] = Z[i,j] ?? 0.0, i < m, j < n;
     C[i,j] += A[i,l] * B[l,j], i < m, l < k, j < n;
  }
}"""
