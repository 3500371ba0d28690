"""`harvest bench join`: speed of the exact m-way join engine vs naive baselines.

Workload: 3-way ε-band join on sensor-like values (a slow daily-like sine + noise per
stream), 20 s windows, 1,000 tuples/s per stream, in order (K = 0). The windows are
pre-filled with 20 s of data (unprobed), then a slice of tuples is processed by the
engine (``Engine.process_many``: the batch path, results built as ``JoinResult``s) and,
in the same run, by two baselines that keep the same window contents
(:mod:`bench.join.baselines`):

* ``naive_numpy``: one flat NumPy array per stream (no basic windows); each probe scans
  the first window vectorized, then loops in Python over the candidates and scans the
  third window once per candidate;
* ``pure_python``: nested Python loops over lists, on a small slice of probes.

``join_only`` is the join operator alone on the same run (``MWayJoin.process_batch``, no
result objects), ``join_per_tuple`` the per-tuple probe (``MWayJoin.process``) it
replaced. Measured with ``time.process_time`` (CPU seconds). Reported: tuples per
CPU-second and tuple comparisons (the GrubJoin cost unit: k partial results × n window
tuples per step) per CPU-second; ``checks`` = the pair evaluations a nested-loop probe
runs (probing tuple × the rows it sees, partial results × rows found) — the issue-20
measure; the batch path evaluates whole blocks, so it also runs pairs outside a probe's
window (``pairs_evaluated`` ≥ ``checks``). Issue 20 adds ``fixed_us_per_tuple`` and the
``indexed`` capacity section (:mod:`bench.join.fast`). Targets: ≥ 20 M evaluations per
CPU-second (issue 2); issue 20: ≥ 200 M checks per CPU-second with tuples per
CPU-second ≥ the recorded 992.9, ≤ 5 µs fixed cost per tuple, with the index ≥ 6,000
tuples/s per stream of demo capacity and the same results (``targets_met``).

The cost unit is GrubJoin's (Gedik et al., GrubJoin, TKDE, §IV-C: k partial results × n
window tuples per step); not a paper's figure. Modules: :mod:`~bench.join.runs` (the
engine and the join operator), :mod:`~bench.join.baselines`, :mod:`~bench.join.fast`
(fixed cost, indexed capacity), :mod:`~bench.join.report` (targets, JSON, PNG, table),
:mod:`~bench.join.main` (the run).
"""

from bench.join.main import run
from bench.join.runs import make_events

__all__ = ["make_events", "run"]
