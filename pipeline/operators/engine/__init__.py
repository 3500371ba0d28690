"""The in-process engine (Ji et al., ICDE, Fig. 2): per-stream K-slack → Synchronizer →
m-way join, with the K policy and the shedder plugged in. ``engine`` keeps the clock,
the adaptation boundaries (L, Δ), K-slack and the Synchronizer; ``step`` joins what they
release — admit → plan → probe → observe → charge — one tuple or a run at a given
``now``; ``stats`` counts what happened.
"""

from pipeline.operators.engine.engine import Engine
from pipeline.operators.engine.stats import EngineStats
from pipeline.operators.engine.step import JoinStep

__all__ = ["Engine", "EngineStats", "JoinStep"]
