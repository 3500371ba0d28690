"""`harvest bench disorder`: quality-driven K (Ji et al., ICDE) vs Max-K-slack vs No-K-slack.

Workloads (all in the same run, same generated input for every method):

* ``equi3``  — Ji et al.'s D_syn^×3 shape: 3 streams (ts, a1), a1 Zipf over [1, 100] with
  a time-varying skew, Zipf delays in [0, 20] s with skews 2, 3, 3; 3-way equi-join on a1,
  windows 5 s.
* ``star4``  — D_syn^×4 shape: 4 streams, delays Zipf skews 3, 3, 3, 4; windows 3 s. Our
  equi workload has a single join attribute, so the star S1.a1 = S2.a1 ∧ S1.a1 = S3.a1 ∧
  S1.a1 = S4.a1 is on a1 for every spoke (Ji et al. use a1, a2, a3 for the three spokes).
* ``positions2`` — stand-in for the soccer data: 2 teams, players within 5 m (distance
  UDF), windows 5 s, heavy-tailed Zipf delays (skew 2) up to 22 s and 26 s.

Each quality run uses Γ ∈ {0.9, 0.95, 0.99, 0.999}, P = 60 s, L = 1 s, g = 10 ms, b = W (n_i = 1).
Ground truth: the join over the complete input, counted per result timestamp with DuckDB
SQL (every pair's window condition and predicate spelled out). γ(P) is measured every L
over the results whose timestamp lies in the last P (first period excluded), from the
engine's complete output. Φ(Γ) = share of measurements with γ(P) ≥ Γ, Φ(.99Γ) likewise.
Baselines are run once and scored against every Γ.

Reference (full runs only): the engine with a *fixed* K ∈ ``FIXED_KS`` on positions2,
scored against every Γ; ``fixed_k_reference.ideal_k_ms[Γ]`` is the smallest of those K
with Φ(.99Γ) ≥ 0.97 — what an oracle that knew the delay distribution in advance could
achieve with one constant K (the yardstick for the adaptive policy's average K).

Late tuples' productivity: ``late_estimate = "mean"`` (the in-order mean), not Ji et
al.'s conservative "max", which overestimates N_true(P−L) (docs/NOTES.md); the recall
guarantee comes from the policy's conservative model instead
(:mod:`pipeline.operators.disorder.quality.policy`).

Follows the evaluation of Ji et al., quality-driven disorder handling for m-way sliding
window stream joins (ICDE): Φ(Γ) and the average K of the quality-driven policy against
Max-K-slack and No-K-slack. Modules: :mod:`~bench.disorder.workload`,
:mod:`~bench.disorder.truth` (ground truth, γ(P)), :mod:`~bench.disorder.runs` (a method's
run and score, the fixed-K reference), :mod:`~bench.disorder.report`,
:mod:`~bench.disorder.main`.
"""

from bench.disorder.main import run
from bench.disorder.workload import Workload, workloads

__all__ = ["Workload", "run", "workloads"]
