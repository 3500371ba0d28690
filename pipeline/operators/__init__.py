"""Engine-agnostic stream operators: plain Python + NumPy, no spec format, Spark or Kafka.

One package per concept, engine on top, the join at the bottom (ARCHITECTURE §2, the
import contract in ``pyproject.toml``):

* :mod:`~pipeline.operators.engine` — K-slack → Synchronizer → m-way join per arriving
  tuple or run (Ji et al., ICDE, Fig. 2), driving the plug-ins;
* :mod:`~pipeline.operators.registry` — which plug-in class serves each spec mode;
* plug-ins: :mod:`~pipeline.operators.disorder` (K-slack sizing, Ji et al.),
  :mod:`~pipeline.operators.shedding` (GrubJoin window harvesting, Gedik et al., and its
  baselines), :mod:`~pipeline.operators.memory` (memory-bounded eviction, Das et al.),
  :mod:`~pipeline.operators.validation` (input validation against stream time, ours);
* :mod:`~pipeline.operators.budget` — the CPU budget sources behind the throttle;
* :mod:`~pipeline.operators.contract` — the plug-in protocols and their optional run
  abilities; :mod:`~pipeline.operators.config` — the engine's frozen configuration;
* :mod:`~pipeline.operators.join` — the m-way sliding-window join (Ji et al. Alg. 2,
  GrubJoin's basic windows and probe plans);
* :mod:`~pipeline.operators.events` — the records flowing through all of them.

This package imports none of them eagerly; import from the subpackage that holds a name.
"""

__all__ = ["budget", "config", "contract", "disorder", "engine", "events", "join", "memory",
           "registry", "shedding", "validation"]
