"""`harvest bench workloads`: how fast the workload generators make records.

Target (issue): generating 1M records takes seconds, not minutes. Measured in one run:

* ``columnar`` - :func:`connectors.workloads.generate_workload` (NumPy, arrival-sorted);
* ``records`` - the same plus conversion to Avro-ready dicts (``Workload.records``);
* ``per_tuple_baseline`` - the baseline: a plain Python loop drawing each tuple with
  ``random`` (same formulas: GrubJoin's X_i(φ) for sensors, Ji et al.'s Zipf a1 and Zipf
  delays for equi), building dicts and sorting by arrival, on a slice of the size.

Rates are records/s (best of ``repeats``); the ratio is vectorized records / baseline.
Writes ``workloads.json`` + ``workloads.png``.

Not a paper's figure; the baselines draw the inputs of GrubJoin's (Gedik et al., TKDE)
and Ji et al.'s (ICDE) evaluations tuple by tuple. Modules: :mod:`~bench.workloads.baselines`
(the per-tuple generators), :mod:`~bench.workloads.report` (table, PNG),
:mod:`~bench.workloads.main` (the timing and the run).
"""

from bench.workloads.baselines import BASELINES
from bench.workloads.main import run

__all__ = ["BASELINES", "run"]
