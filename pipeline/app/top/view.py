"""How `harvest top` shows a :class:`~pipeline.app.top.model.TopModel` snapshot: a rich
table per refresh on a terminal, one JSON line per refresh otherwise."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
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


def _count(value: Any) -> str:
    """A count in at most 6 characters: ``99,999``, then ``123k``, ``1.23M``, ``12.3M``.

    >>> [_count(v) for v in (7, 99999, 123456, 1234567, 12345678, 1.5e12, None)]
    ['7', '99,999', '123k', '1.23M', '12.3M', '1,500G', '-']
    """
    if value is None:
        return "-"
    v = float(value)
    if abs(v) < 100_000:
        return _num(v)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale or suffix == "k":
            q = v / scale
            digits = 0 if abs(q) >= 100 else 1 if abs(q) >= 10 else 2
            return f"{q:,.{digits}f}{suffix}"
    raise AssertionError("unreachable")


def _rate(value: Any) -> str:
    """A rate per second: one decimal below 100/s, then whole (:func:`_count` above
    99,999).

    >>> _rate(12.34), _rate(60001.2), _rate(600001.0), _rate(None)
    ('12.3', '60,001', '600k', '-')
    """
    if value is None:
        return "-"
    return _num(value, 1) if abs(float(value)) < 100 else _count(value)


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


#: the per-instance numbers, one column each (the first table)
NUMBER_COLUMNS = ("instance", "in/s", "out/s", "z", "K ms", "drops", "rejects", "est. recall",
                  "state")
#: sparkline bars (5 s each) at most, and at least, whatever the terminal's width
MAX_BARS = 30
MIN_BARS = 6
#: the tables' columns are separated by this many characters
_GAP = 2


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
                f"input {_rate(job['input_rows_per_s'])} rows/s\n")
    text.append(f"lag {lag_text}   results {_num(totals['results'])}   metrics rows "
                f"{_num(totals['metrics'])}")
    if totals["undecodable_results"]:
        text.append(f" ({_num(totals['undecodable_results'])} results undecodable: not in "
                    "the rates; --spec decodes a spec's own result schema)", style="yellow")
    return text


def _table(names: Sequence[str]) -> Table:
    """A borderless table whose columns never shrink below their header or cells."""
    table = Table(box=None, pad_edge=False, padding=(0, _GAP // 2), expand=False,
                  header_style="bold underline")
    for name in names:
        table.add_column(name, justify="left" if name in ("instance", "harvest z_ij")
                         or "history" in name else "right", no_wrap=True)
    return table


def _numbers(rows: Sequence[dict[str, Any]]) -> Table:
    """Rates, z, K, drops, rejects, estimated recall and state size per instance: under
    80 characters wide whatever the values (counts as :func:`_count`), so an 80-column
    terminal shows all of them."""
    table = _table(NUMBER_COLUMNS)
    for row in rows:
        table.add_row(
            row["instance"], _rate(row["in_per_s"]), _rate(row["out_per_s"]),
            _num(row["z"], 3), _num(row["k_ms"]), _count(row["queue_drops"]),
            _count(row["rejects"]), _num(row["estimated_recall"], 3), _count(row["state_size"]))
    return table


@dataclass(frozen=True)
class Histories:
    """The harvest fractions and the sparklines of output rate and z per instance, with
    as many bars (:data:`MIN_BARS` to :data:`MAX_BARS`) as the terminal's width leaves."""

    rows: Sequence[dict[str, Any]]

    def bars(self, width: int) -> int:
        """Bars per sparkline for a console ``width`` characters wide."""
        names = max([len("instance"), *(len(r["instance"]) for r in self.rows)])
        cells = max([len("harvest z_ij"),
                     *(len(fractions(r["harvest_fractions"])) for r in self.rows)])
        return max(MIN_BARS, min(MAX_BARS, (width - names - cells - 3 * _GAP) // 2))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        bars = self.bars(options.max_width)
        span = bars * 5
        table = _table(("instance", "harvest z_ij", f"out/s history {span}s",
                        f"z history {span}s"))
        for row in self.rows:
            history = row["history"]
            table.add_row(row["instance"], fractions(row["harvest_fractions"]),
                          sparkline(history["out_per_s"][-bars:]),
                          sparkline(history["z"][-bars:], top=1.0))
        yield table


def render(snap: dict[str, Any], title: str = "harvest top") -> RenderableType:
    """The snapshot as a header, a table of numbers per operator instance and one of its
    harvest fractions and sparklines (the sparklines fit the terminal's width)."""
    if not snap["instances"]:
        return Group(_header(snap, title), Text("waiting for the job's metrics …"))
    return Group(_header(snap, title), _numbers(snap["instances"]),
                 Histories(snap["instances"]))


def json_line(snap: dict[str, Any]) -> str:
    """The snapshot as one JSON line (``--json``, or no terminal)."""
    return json.dumps(snap, separators=(",", ":"), sort_keys=True)
