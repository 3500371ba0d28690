"""`harvest bench pipeline [--quick]`: the whole pipeline under load, on real Kafka + Spark.

Part 1 — nonaligned sensors (the demo's workload and spec, with its quality-driven K at
Γ = 0.95; one route key), input rates at 1.5× and 2× the full join's capacity measured
at the start of the run (:mod:`pipeline.app.capacity`), for ``grubjoin`` and the
baselines ``randomdrop-static`` (the paper's, fixed after a warm-up) and ``taildrop`` (a
queue bounded in waiting time) at both rates, and shedding ``off`` and the adaptive
``randomdrop`` at 2× only (:data:`SWEEP`; ``--quick``: 2× only), all on the wall budget
and the engine's batch path (every method joins whole runs at once): output rate, recall
and precision vs the oracle, end-to-end latency p50/p99 and its trend (per result, and
the staleness of each output burst) from Kafka append times
(:mod:`bench.pipeline.measure`). Each grubjoin row carries its output over each baseline
at the same rate and over the best baseline that meets the same latency bound, p99 ≤ 3 ×
trigger (``ratio_vs_best_baseline``; :mod:`bench.pipeline.report`, which also judges
the targets at 2× and gives the measured reason for each one missed).

Part 2 (``--quick`` only; the full comparison is ``harvest bench peer``) — peer
comparison on the equi workload in the same run: our job (hash routing, shedding off,
K = max delay) vs the same 3-way join with Spark's built-in stream-stream joins
(:mod:`pipeline.spark.builtin_join`), ratios ours/theirs printed.

Steady state, not a burst: each run gets a fresh topic prefix and its own query on one
shared Spark session (``local[2]``); input is published only after the query's first
micro-batch (planning, Python workers) is done, paced at ``speedup`` × real time for
``duration_s`` of stream time (240 s; the equi runs 60 s). Latency percentiles and trend
— and output rate and recall, the whole run's kept beside them — are taken over the
steady span (:func:`bench.pipeline.measure.steady_bounds`): from two window lengths
(120 s) to 90% of the input span, so the window fill and the controllers' convergence
are left out — random dropping's cost trails its drops by a window length. Each row's
``timeline`` (correct and true results per 20 s) shows the whole run. A run that falls
behind is stopped ``grace_s`` after its input ends (``stopped`` says so); its recall then
only counts what it emitted by then. Writes ``bench/results/pipeline.json`` and
``pipeline.png``.

Follows GrubJoin's evaluation (Gedik et al., GrubJoin, TKDE, §VI: output rate of the
shedders against random drop at overload, Fig. 11) on the whole Kafka + Spark pipeline.
Modules: :mod:`~bench.pipeline.workload` (spec, sweep, cases), :mod:`~bench.pipeline.runs`
(one run), :mod:`~bench.pipeline.measure` (its measures), :mod:`~bench.pipeline.report`
(ratios, targets, JSON), :mod:`~bench.pipeline.plot`, :mod:`~bench.pipeline.main`.
"""

from bench.pipeline.main import remeasure, run
from bench.pipeline.measure import RunMeasure, measure
from bench.pipeline.workload import METHODS, QUICK_SWEEP, SWEEP, measure_capacity, sensor_spec

__all__ = ["METHODS", "QUICK_SWEEP", "SWEEP", "RunMeasure", "measure", "measure_capacity",
           "remeasure", "run", "sensor_spec"]
