"""`harvest bench pipeline [--quick] [--only PARTS]`: window harvesting against the drop
baselines on the whole pipeline under load, on real Kafka + Spark (issue 28, item 5).

Three workloads (:data:`~bench.pipeline.workload.WORKLOADS`): the demo's nonaligned
sensors' band join (no index, quality-driven K), the news workload's cosine join and the
positions workload's distance join. Each one's full-join capacity is measured at the
start through the job's join instance (:mod:`pipeline.app.capacity`); then, per workload,
at 1.5×, 2× and 3× that capacity, every method runs in the same sweep: ``grubjoin``,
``taildrop`` (a queue bounded in waiting time) and ``randomdrop-static`` (the paper's,
fixed after a warm-up), and shedding ``off`` at 2× (:data:`~bench.pipeline.workload.SWEEP`),
all on the wall budget. Per run: output rate, recall and precision vs the oracle,
end-to-end latency p50/p99 and its trend from Kafka append times, correct and exact
results per 10 s (``timeline``) (:mod:`bench.pipeline.measure`), and where the time of
an admitted tuple goes, the instances' phases and Spark's (:mod:`bench.pipeline.profile`).
The report (:mod:`bench.pipeline.report`) gives per workload and load grubjoin's output
over the best baseline within p99 ≤ 3 × trigger (``summary``) and judges issue 28's
targets (``targets_met`` / ``targets_missed_why``). ``--only sensors-nonaligned:2`` (or
``workload:load:method``, comma-separated) re-runs points with the earlier run's capacity
and merges them into the existing JSON; ``--only remeasure`` measures the existing runs
again from their topics. ``--quick``: a smoke run (one workload, one load, two methods).

Steady state, not a burst: each run gets a fresh topic prefix and its own query on one
shared Spark session (``local[2]``); input is published only after the query's first
micro-batch is done, paced at ``speedup`` × real time for ``duration_s`` of stream time.
Output rate, recall and latency are taken over the steady span
(:func:`bench.pipeline.measure.steady_bounds`), after 1.5 window lengths of fill and
convergence. A run that falls behind is stopped ``grace_s`` after its input ends
(``stopped`` says so). Writes ``bench/results/pipeline.json`` and one
``pipeline_<workload>.png`` per workload (:mod:`bench.pipeline.plot`).

Follows GrubJoin's evaluation (Gedik et al., GrubJoin, TKDE, §VI: output rate of the
shedders against random drop at overload, Fig. 11) on the whole Kafka + Spark pipeline.
"""

from bench.pipeline.main import plan, remeasure, run
from bench.pipeline.measure import RunMeasure, measure
from bench.pipeline.workload import (
    METHODS,
    QUICK_SWEEP,
    SWEEP,
    WORKLOADS,
    measure_capacity,
    sensor_spec,
)

__all__ = ["METHODS", "QUICK_SWEEP", "SWEEP", "WORKLOADS", "RunMeasure", "measure",
           "measure_capacity", "plan", "remeasure", "run", "sensor_spec"]
