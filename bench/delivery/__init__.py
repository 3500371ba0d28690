"""`harvest bench delivery [--quick]`: exactly-once vs at-least-once output, same input.

The job is the e2e tests' exact band join (3 sensor streams, 1.5 s windows, ε = 0.1
(0.4 in the paced run), K = the largest delay, ATR over 2 route keys, 1 s trigger) —
shedding off, so both sinks must write exactly the oracle's results and the comparison
is of the sink alone:
``[output] delivery = "at-least-once"`` (Spark's Kafka sink) against ``"exactly-once"``
(one Kafka transaction per micro-batch from the driver, :mod:`pipeline.spark.exactly_once`).

* **Backlog drain** — the input (200 tuples/s per stream × 40 s of stream time, 24k
  records, ~24k results) is published while the query waits (after its first, empty
  micro-batch has planned the query and started the Python workers); the query drains
  it in micro-batches of ``max_offsets_per_trigger`` = 6000 offsets. Throughput = input
  records / the summed wall time of the micro-batches that read input (results/s
  beside it). A small unreported drain warms the Spark session up first; then each sink
  drains twice, in the order A B B A, against the load of the machine drifting; the
  row per sink is the mean of its two runs (both are in ``runs``).
* **Paced run** — 30 tuples/s per stream for 45 s, published in real time while the
  query runs (below the job's capacity on a shared 2-core machine). Latency of a result
  = when a ``read_committed`` consumer running beside the job received it − the Kafka
  append time of its latest member (the same host clock). p50/p99 over the results
  completed between 20 % and 90 % of the input span (the windows filling and the final
  idle flush left out).

Every run gets fresh topics and checkpoint; both sinks read the same generated records.
Each row also reports whether its results equal the oracle's, the duplicates, and for
exactly-once the median transaction and ``commit_transaction`` time per micro-batch.
Writes ``bench/results/delivery.json`` and ``delivery.png``.

Not a paper's figure: the price of the exactly-once sink (Kafka transactions) against
at-least-once on the same job and input. Modules: :mod:`~bench.delivery.workload` (spec,
records), :mod:`~bench.delivery.measures` (a run's row), :mod:`~bench.delivery.readback`
(results and latencies read back), :mod:`~bench.delivery.runs` (one query),
:mod:`~bench.delivery.report` (JSON, PNG), :mod:`~bench.delivery.main` (the run).
"""

from bench.delivery.main import run
from bench.delivery.measures import Run

__all__ = ["Run", "run"]
