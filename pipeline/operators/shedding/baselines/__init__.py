"""The shedders GrubJoin is compared with (Gedik et al., TKDE §VI): RandomDrop re-sized
every Δ by the same throttle (``randomdrop``), the paper's RandomDrop with keep
probabilities fixed after a warm-up (``randomdrop_static``), and tail drop — the full
join behind a bounded input queue (``taildrop``).
"""

from pipeline.operators.shedding.baselines.randomdrop import RandomDropShedder
from pipeline.operators.shedding.baselines.randomdrop_static import StaticRandomDropShedder
from pipeline.operators.shedding.baselines.taildrop import TailDropShedder

__all__ = ["RandomDropShedder", "StaticRandomDropShedder", "TailDropShedder"]
