"""Disorder models: per-tuple network delays that turn event order into arrival order.

A delay is a non-negative integer number of milliseconds; a tuple arrives at
``arrival_time = event_time + delay`` (ARCHITECTURE §4). Models:

* ``none``   — delay 0 (the stream arrives in order).
* ``exp``    — exponential delays with the given mean (ms), rounded to integers.
* ``zipf``   — Ji et al. (ICDE, §VI, datasets D_syn^×3 / D_syn^×4): a delay drawn from
  [0, max] with a Zipf distribution of skew z: the delay grid 0, step, 2·step, ..., max
  is ranked 1..N and rank k has probability k^-z / Σ_j j^-z. The paper uses max = 20 s
  and skews 2–4; it does not state the grid, we default to step = 10 ms (its K
  granularity g).
* ``bursty`` — a small exponential base delay plus occasional bursts: bursts start as a
  Poisson process in event time (mean gap ``gap`` ms) and last ``length`` ms; a tuple
  whose event time falls inside a burst gets an extra delay uniform in [0, ``peak``] ms.

Text syntax (``harvest produce --disorder``): ``MODEL[:key=value,...]``, e.g.
``zipf:max=20000,skew=3`` or ``exp:mean=500``; several models separated by ``;`` give one
per stream (``none;exp:mean=200;zipf:max=20000,skew=2``), a single one applies to all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.errors import ConfigError


@dataclass(frozen=True)
class NoDelay:
    """Every tuple arrives at its event time."""

    def describe(self) -> str:
        """The model in ``--disorder`` syntax."""
        return "none"


@dataclass(frozen=True)
class ExponentialDelay:
    """Exponential delay with mean ``mean_ms`` (rounded to whole ms)."""

    mean_ms: float

    def __post_init__(self) -> None:
        if not self.mean_ms > 0:
            raise ConfigError(f"disorder exp: mean must be > 0 ms, got {self.mean_ms!r}")

    def describe(self) -> str:
        """The model in ``--disorder`` syntax."""
        return f"exp:mean={self.mean_ms:g}"


@dataclass(frozen=True)
class ZipfDelay:
    """Ji et al. §VI: delay ∈ [0, max_ms] on a grid of ``step_ms``, Zipf with ``skew``."""

    max_ms: int = 20_000
    skew: float = 2.0
    step_ms: int = 10

    def __post_init__(self) -> None:
        if self.max_ms < 0:
            raise ConfigError(f"disorder zipf: max must be >= 0 ms, got {self.max_ms!r}")
        if self.skew < 0:
            raise ConfigError(f"disorder zipf: skew must be >= 0, got {self.skew!r}")
        if self.step_ms <= 0:
            raise ConfigError(f"disorder zipf: step must be > 0 ms, got {self.step_ms!r}")

    def describe(self) -> str:
        """The model in ``--disorder`` syntax."""
        return f"zipf:max={self.max_ms},skew={self.skew:g},step={self.step_ms}"


@dataclass(frozen=True)
class BurstyDelay:
    """Exponential base delay (``mean_ms``) plus bursts of up to ``peak_ms`` extra delay."""

    mean_ms: float = 20.0
    gap_ms: float = 30_000.0
    length_ms: float = 2_000.0
    peak_ms: float = 10_000.0

    def __post_init__(self) -> None:
        for name, value in (
            ("mean", self.mean_ms),
            ("gap", self.gap_ms),
            ("length", self.length_ms),
            ("peak", self.peak_ms),
        ):
            if not value > 0:
                raise ConfigError(f"disorder bursty: {name} must be > 0 ms, got {value!r}")

    def describe(self) -> str:
        """The model in ``--disorder`` syntax."""
        return (
            f"bursty:mean={self.mean_ms:g},gap={self.gap_ms:g},"
            f"length={self.length_ms:g},peak={self.peak_ms:g}"
        )


DelayModel = NoDelay | ExponentialDelay | ZipfDelay | BurstyDelay


def zipf_pmf(n: int, skew: float) -> np.ndarray:
    """P(rank = k) ∝ k^-skew for k = 1..n (skew 0 is uniform)."""
    weights = np.arange(1, n + 1, dtype=np.float64) ** -float(skew)
    return weights / weights.sum()


def sample_zipf_ranks(
    n_values: int, skew: float, size: int, rng: np.random.Generator
) -> np.ndarray:
    """``size`` ranks in 0..n_values-1 (0 = most likely), Zipf with ``skew``, by inverse CDF."""
    cdf = np.cumsum(zipf_pmf(n_values, skew))
    cdf[-1] = 1.0
    ranks = np.searchsorted(cdf, rng.random(size), side="right")
    return np.minimum(ranks, n_values - 1).astype(np.int64)


def sample_delays(
    model: DelayModel, event_times: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Integer delays (ms, ≥ 0) for tuples with the given event times (one per tuple)."""
    n = len(event_times)
    if isinstance(model, NoDelay):
        return np.zeros(n, dtype=np.int64)
    if isinstance(model, ExponentialDelay):
        return np.rint(rng.exponential(model.mean_ms, n)).astype(np.int64)
    if isinstance(model, ZipfDelay):
        grid = model.max_ms // model.step_ms + 1
        return sample_zipf_ranks(grid, model.skew, n, rng) * model.step_ms
    base = np.rint(rng.exponential(model.mean_ms, n)).astype(np.int64)
    if n == 0:
        return base
    lo, hi = int(event_times.min()), int(event_times.max())
    expected = (hi - lo) / model.gap_ms
    count = int(rng.poisson(expected)) if expected > 0 else 0
    starts = np.sort(rng.uniform(lo, hi, count)) if count else np.empty(0)
    in_burst = burst_mask(event_times, starts, model.length_ms)
    extra = np.rint(rng.uniform(0.0, model.peak_ms, n)).astype(np.int64)
    return base + np.where(in_burst, extra, 0)


def burst_mask(event_times: np.ndarray, starts: np.ndarray, length_ms: float) -> np.ndarray:
    """True where an event time lies in some burst [start, start + length)."""
    if len(starts) == 0:
        return np.zeros(len(event_times), dtype=bool)
    idx = np.searchsorted(starts, event_times, side="right") - 1
    ok = idx >= 0
    mask = np.zeros(len(event_times), dtype=bool)
    mask[ok] = event_times[ok] < starts[idx[ok]] + length_ms
    return mask


_KEYS: dict[str, dict[str, str]] = {
    "none": {},
    "exp": {"mean": "mean_ms"},
    "zipf": {"max": "max_ms", "skew": "skew", "step": "step_ms"},
    "bursty": {"mean": "mean_ms", "gap": "gap_ms", "length": "length_ms", "peak": "peak_ms"},
}
_INT_FIELDS = {"max_ms", "step_ms"}


def parse_model(text: str) -> DelayModel:
    """One model from ``MODEL[:key=value,...]``; raises :class:`ConfigError` naming the text."""
    name, _, rest = text.strip().partition(":")
    name = name.strip().lower()
    if name not in _KEYS:
        raise ConfigError(
            f"unknown disorder model {name!r} in {text!r}; expected one of {sorted(_KEYS)}"
        )
    kwargs: dict[str, float | int] = {}
    for part in (p for p in rest.split(",") if p.strip()):
        key, eq, raw = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in _KEYS[name]:
            raise ConfigError(
                f"disorder {name}: bad parameter {part.strip()!r} in {text!r}; "
                f"expected key=value with key in {sorted(_KEYS[name])}"
            )
        field = _KEYS[name][key]
        try:
            kwargs[field] = int(raw) if field in _INT_FIELDS else float(raw)
        except ValueError:
            raise ConfigError(
                f"disorder {name}: {key} must be a number, got {raw.strip()!r} in {text!r}"
            ) from None
    if name == "none":
        return NoDelay()
    if name == "exp":
        if "mean_ms" not in kwargs:
            raise ConfigError(f"disorder exp: missing mean=<ms> in {text!r}")
        return ExponentialDelay(float(kwargs["mean_ms"]))
    if name == "zipf":
        return ZipfDelay(**kwargs)  # type: ignore[arg-type]
    return BurstyDelay(**kwargs)


def parse_disorder(text: str, streams: int) -> tuple[DelayModel, ...]:
    """One model per stream from ``M`` (for all) or ``M1;M2;...;Mm``."""
    parts = [p for p in text.split(";") if p.strip()]
    if not parts:
        raise ConfigError(f"empty --disorder value {text!r}")
    models = tuple(parse_model(p) for p in parts)
    if len(models) == 1:
        return models * streams
    if len(models) != streams:
        raise ConfigError(
            f"--disorder gives {len(models)} models for {streams} streams in {text!r}; "
            "give one model for all streams or exactly one per stream"
        )
    return models
