"""Running cases on an existing Dask distributed cluster (`refinterp check --dask ADDRESS`):
an optional extra (`pip install 'refinterp[dask]'`); every case is one task."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from refinterp.core.diagnostics import GoldenDiagnostic


def run_on_dask(address: str, function: Callable[[Any], Any], work: list[Any]) -> Iterator[Any]:
    """`function(item)` for every item on the cluster at `address`, results as they finish."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise GoldenDiagnostic("--dask needs the Dask distributed package: pip install "
                               "'refinterp[dask]'", code="E0901") from None
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as error:
        raise GoldenDiagnostic(f"cannot reach the Dask scheduler at {address}: {error}",
                               code="E0901") from None
    with client:
        futures = client.map(function, work, pure=False)
        for future in as_completed(futures):
            yield future.result()
