"""`harvest bench memory [--quick]`: memory-bounded joins (Das, Gehrke, Riedewald,
"Semantic Approximation of Data Stream Joins", TKDE §5.2) — eviction policies against
OPT-offline and the exact join.

Reproduced with the paper's parameters (2-way equi-join, domain 50, one tuple per stream
per step, w = 400 and 800, M from 10% to 150% of w, 2w warm-up steps not counted, then
1,000 counted steps — the paper ran 5,600 steps; OPT on the same input):

* Figs. 7–8 — output vs M, Zipf 1 on R and uniform S: OPT, PROB, LIFE, RAND, EXACT (and
  our LAGPROB);
* Fig. 9 — both uniform: every online policy ≈ RAND;
* Figs. 10–11 — PROB/OPT and RAND/OPT vs the (common) Zipf skew at M = w, uncorrelated
  (each stream ranks the values differently) and correlated; again at the paper's input
  length (``fig10-long``/``fig11-long``: 4,800 counted steps, Zipf ≥ 1);
* variable allocation — PROBV/RANDV/OPTV against PROB/RAND/OPT and each stream's share;
* closer to the paper's weather data (§5.2.4, ``weather``): domain 650, w = 5,000, both
  streams Zipf with the same ranking, M = w;

``PROB-KNOWN`` rows are PROB with the whole input's frequencies loaded in advance (the
paper's setting, which needs the future): a comparison, never a target;

and beyond the paper: 3-way equi and 2-/3-way band joins, and LAGPROB vs PROB on lagged
sensor streams at 25% memory (:mod:`bench.memory.runs`). Rows: ``{workload, streams,
window (tuples per stream), memory_fraction (M / tuples the exact join holds), zipf,
method, results, ratio_to_opt, ratio_to_exact}`` plus M, allocation and costs. The
targets and the paper's numbers next to ours: :mod:`bench.memory.report`.

Modules: :mod:`~bench.memory.runs` (workloads, the online policies and OPT),
:mod:`~bench.memory.report`, :mod:`~bench.memory.plot`, :mod:`~bench.memory.main` (the
plan and the run), :mod:`~bench.memory.permutations` (``python -m
bench.memory.permutations``: PROB/OPT over value rankings).
"""

from bench.memory.main import plan, run

__all__ = ["plan", "run"]
