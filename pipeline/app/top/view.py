"""How `harvest top` shows a :class:`~pipeline.app.top.model.TopModel` snapshot: a rich
table per refresh on a terminal, one JSON line per refresh otherwise."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], top: float | None = None) -> str:
    """One bar character per value scaled to ``top`` (default: the largest); a gap
    for None.

    >>> sparkline([0.0, 0.5, 1.0, None])
    '▁▅█ '
    """
    known = [v for v in values if v is not None]
    scale = top if top is not None else max(known, default=0.0)
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        elif scale <= 0:
            out.append(BARS[0])
        else:
            out.append(BARS[min(len(BARS) - 1, int(v / scale * (len(BARS) - 1) + 0.5))])
    return "".join(out)


def _num(value: Any, digits: int = 0) -> str:
    """A number with thousands separators; ``-`` when unknown.

    >>> _num(12345.678, 1), _num(None)
    ('12,345.7', '-')
    """
    if value is None:
        return "-"
    return f"{float(value):,.{digits}f}"


def fractions(values: Sequence[float], m: int | None = None) -> str:
    """The harvest fractions z_ij, one group per stream i (``m - 1`` partners each).

    >>> fractions([1.0, 0.5, 0.25, 0.0, 1.0, 1.0])
    '1.00 .50 | .25 .00 | 1.00 1.00'
    """
    if not values:
        return "-"
    n = len(values)
    per = (m - 1) if m else next((k - 1 for k in range(2, 9) if k * (k - 1) == n), n)
    cells = [f"{v:.2f}".removeprefix("0") if v < 1 else f"{v:.2f}" for v in values]
    return " | ".join(" ".join(cells[i:i + per]) for i in range(0, n, max(per, 1)))


def _header(snap: dict[str, Any], title: str) -> Text:
    job = snap["job"]
    clock = time.strftime("%H:%M:%S", time.localtime(snap["as_of_ms"] / 1000.0))
    state = "live" if snap["live"] else "ended (newest record shown)"
    lag = job["lag"]
    lag_text = "-" if lag is None else f"{_num(lag['total'])} records"
    totals = snap["totals"]
    text = Text(f"{title}   {clock} {state}   q quits\n", style="bold")
    text.append(f"query: {_num(job['batches'])} micro-batches   batch "
                f"{_num(job['batch_ms_last'])} ms (p50 {_num(job['batch_ms_p50'])})   "
                f"input {_num(job['input_rows_per_s'], 1)} rows/s   lag {lag_text}   "
                f"results {_num(totals['results'])}   metrics rows {_num(totals['metrics'])}")
    if totals["undecodable_results"]:
        text.append(f" ({_num(totals['undecodable_results'])} results undecodable: not in "
                    "the rates; --spec decodes a spec's own result schema)", style="yellow")
    return text


def render(snap: dict[str, Any], title: str = "harvest top") -> RenderableType:
    """The snapshot as a header and a table with one row per operator instance."""
    table = Table(expand=False, pad_edge=False)
    for name in ("instance", "in/s", "out/s", "z", "harvest z_ij", "K ms", "drops",
                 "rejects", "est. recall", "state", "out/s history", "z history"):
        table.add_column(name, justify="left" if "history" in name or name == "instance"
                         or name == "harvest z_ij" else "right", no_wrap=True)
    for row in snap["instances"]:
        history = row["history"]
        table.add_row(
            row["instance"], _num(row["in_per_s"], 1), _num(row["out_per_s"], 1),
            _num(row["z"], 3), fractions(row["harvest_fractions"]), _num(row["k_ms"]),
            _num(row["queue_drops"]), _num(row["rejects"]),
            _num(row["estimated_recall"], 3), _num(row["state_size"]),
            sparkline(history["out_per_s"][-30:]), sparkline(history["z"][-30:], top=1.0))
    if not snap["instances"]:
        return Group(_header(snap, title), Text("waiting for the job's metrics …"))
    return Group(_header(snap, title), table)


def json_line(snap: dict[str, Any]) -> str:
    """The snapshot as one JSON line (``--json``, or no terminal)."""
    return json.dumps(snap, separators=(",", ":"), sort_keys=True)
