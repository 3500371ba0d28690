"""The workload of `harvest bench state`: the demo's join with a given window, ε = 10⁻⁶ and
shedding off, drifting values with capped exponential delays, cut into micro-batches."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.core.settings import PROJECT_ROOT
from pipeline.spark import processor as proc
from pipeline.spec.model import Spec, load_spec
from pipeline.spec.toml import with_overrides

WINDOWS_S = (10, 60, 300)
RATE = 1200  # tuples/s per stream (the demo's)
STREAMS = 3
TRIGGER_MS = 1000
EPSILON = 1e-6
MEAN_DELAY_MS = 100.0
MAX_DELAY_MS = 2000
#: micro-batches before measuring: K-slack and the quality policy's delay statistics
#: (ADWIN windows of up to 20,000 delays per stream, ~17 s at this rate) fill up
SETTLE = 20
SETTLE_QUICK = 3
MEASURED = 12
MEASURED_QUICK = 3
TARGET_GROWTH = 2.0
DESIGNS: tuple[proc.StateLayout, ...] = ("blob", "incremental")


def bench_spec(window_s: int) -> Spec:
    """The demo spec with a ``window_s`` window, ε = 10⁻⁶, shedding off, 1 s trigger."""
    spec = load_spec(PROJECT_ROOT / "examples" / "specs" / "demo.toml")
    return with_overrides(
        spec,
        join={"window_ms": window_s * 1000, "epsilon": EPSILON, "index": True},
        shedding={"mode": "off", "budget": "virtual"},
        job={"budget": "virtual", "trigger_ms": TRIGGER_MS},
    )


def generate_streams(seconds: float, seed: int) -> list[dict[str, np.ndarray]]:
    """Per stream: ts (sorted, ``RATE``/s), seq, value (ts in seconds + noise), arrival
    (ts + capped exponential delay)."""
    rng = np.random.default_rng(seed)
    n = int(RATE * seconds)
    out = []
    for _ in range(STREAMS):
        ts = np.sort(rng.integers(0, int(seconds * 1000), size=n))
        value = ts / 1000.0 + rng.normal(0.0, 0.05, n)
        delay = np.minimum(rng.exponential(MEAN_DELAY_MS, n), MAX_DELAY_MS).astype(np.int64)
        out.append({"ts": ts, "seq": np.arange(n, dtype=np.int64), "value": value,
                    "arrival": ts + delay})
    return out


def micro_batches(streams: list[dict[str, np.ndarray]], t0: int, count: int
             ) -> list[pd.DataFrame]:
    """Micro-batches of the tuples with ts ≥ t0, by arrival, ``TRIGGER_MS`` each."""
    parts = []
    for j, s in enumerate(streams):
        keep = s["ts"] >= t0
        n = int(keep.sum())
        parts.append(pd.DataFrame({
            "stream_idx": np.full(n, j), "stream": f"s{j + 1}", "seq": s["seq"][keep],
            "event_time": s["ts"][keep], "arrival_time": s["arrival"][keep],
            "value": s["value"][keep], "partition": np.zeros(n, np.int64),
            "offset": s["seq"][keep]}))
    frame = pd.concat(parts, ignore_index=True)
    out = []
    for k in range(count):
        lo, hi = t0 + k * TRIGGER_MS, t0 + (k + 1) * TRIGGER_MS
        batch = frame[(frame["arrival_time"] >= lo) & (frame["arrival_time"] < hi)]
        out.append(batch.reset_index(drop=True))
    return out
