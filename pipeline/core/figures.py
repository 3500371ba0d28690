"""Matplotlib figures on the non-interactive Agg backend (the demo report and benchmarks)."""

from __future__ import annotations

from typing import Any


def new_figure(ncols: int = 1, nrows: int = 1, size: tuple[float, float] = (7.0, 4.5)) -> Any:
    """A ``(figure, axes)`` pair on the Agg backend, so no display is needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(nrows, ncols, figsize=size)
