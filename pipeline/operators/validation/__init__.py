"""Input validation against stream time, before K-slack (ours; ARCHITECTURE §7):
far-future and too-late tuples, duplicates, non-finite readings. ``config`` holds the
settings and verdict types, ``clock`` the per-stream median clocks both paths share,
``validator`` the per-tuple rules and their state, ``batch`` the same rules over a whole
batch with array operations, ``holds`` what the engine already holds (duplicates).
"""

from pipeline.operators.validation.clock import batch_reference
from pipeline.operators.validation.config import Admission, Rejected, ValidatorConfig
from pipeline.operators.validation.validator import InputValidator

__all__ = ["Admission", "InputValidator", "Rejected", "ValidatorConfig", "batch_reference"]
