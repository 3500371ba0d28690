"""Memory-bounded joins: eviction policies (Das, Gehrke, Riedewald, "Semantic
Approximation of Data Stream Joins", TKDE) and the offline optimum.

Modules: ``stats`` (value frequencies), ``lags`` (match-lag hazards), ``bound``
(admission), ``policies`` (rand, prob, life, lagprob), ``join`` (the bounded m-way join),
``opt`` (OPT-offline as min-cost flow). The configuration, ``MemoryConfig``, sits with
the engine's other plug-in configurations in :mod:`pipeline.operators.config`.
"""

from pipeline.operators.memory.bound import BoundedMemory
from pipeline.operators.memory.join import BoundedJoin, make_join
from pipeline.operators.memory.policies import (
    MEMORY_POLICIES,
    build_memory,
    memory_class,
    restore_memory,
)

__all__ = [
    "MEMORY_POLICIES",
    "BoundedJoin",
    "BoundedMemory",
    "build_memory",
    "make_join",
    "memory_class",
    "restore_memory",
]
