"""`harvest bench grubjoin [--quick]`: GrubJoin (Gedik et al., TKDE) §VI reproductions.

* Fig. 7 — optimality φ = O(solver)/O(optimum) over random instances (m = 3, n = 10)
  for the online solver ``configure`` and the paper's greedy variants; Fig. 8 —
  configuration time vs n (:mod:`bench.grubjoin.solvers`);
* Fig. 11/12/13, Table II — output rate of grubjoin (and the paper's greedy solver in
  Fig. 11) against three baselines — adaptive random drop, the paper's static random drop
  and tail drop — on the sensors workload, with the virtual CPU calibrated so the full
  3-way join saturates at 100 tuples/s per stream (w = 20 s, b = 2 s, ε = 1, D = 1000,
  η = 50, Δ = 5 s, ω = 0.1, queue 10); and the Fig. 11 sweep again on the wall-clock
  budget (:mod:`bench.grubjoin.sweeps`, on the simulator of :mod:`bench.grubjoin.sim`).
  ``figures`` puts the paper's numbers and ours side by side, with notes where they
  differ (:mod:`bench.grubjoin.paper`);
* ``index_effect`` (ours) — wall clock of the exact 3-way band join with and without
  per-basic-window sorted indexes (:mod:`bench.grubjoin.index`).

``--only optimality,config_time,sweeps,index_effect`` runs a subset (default: all) — or
single sweeps, e.g. ``--only kappa_sweep,cost_sweep`` — and merges its keys into the
existing grubjoin.json, regenerating only the affected PNGs
(:mod:`bench.grubjoin.plot`); ``--only figures`` runs nothing and derives the ratios,
``figures`` and targets (with ``targets_missed_why``) again from the JSON's rows; ratios
and targets: :mod:`bench.grubjoin.targets`.

Modules: :mod:`~bench.grubjoin.sim` (the simulator: real MWayJoin + shedder on a virtual
CPU or the wall clock), :mod:`~bench.grubjoin.solvers`, :mod:`~bench.grubjoin.sweeps`,
:mod:`~bench.grubjoin.index`, :mod:`~bench.grubjoin.paper` (the paper's numbers),
:mod:`~bench.grubjoin.targets`, :mod:`~bench.grubjoin.plot`, :mod:`~bench.grubjoin.main`
(the run).
"""

from bench.grubjoin.main import PARTS, run

__all__ = ["PARTS", "run"]
