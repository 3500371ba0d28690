"""ADWIN: adaptive windowing over a numeric stream (Bifet & Gavaldà, SIAM SDM 2007).

Ji et al. (ICDE, §IV-A) keep each stream's delay histogram over a window R_i^stat whose
size is adapted with ADWIN. This module is the change detector only: it keeps the
window as an exponential histogram of buckets (ADWIN2), so memory and time per item are
O(log W), and it reports how many of the *oldest* items it dropped, so that a caller can
keep a parallel summary (our delay histogram) over exactly the same window.

Cut test (ADWIN2, Bernstein form): for every split of the window into an older part W0
(n0 items) and a newer part W1 (n1 items) at a bucket boundary, the window is cut when

    |mean(W0) − mean(W1)| > sqrt(2 · (1/n0 + 1/n1) · σ²_W · ln(2 ln(n)/δ))
                            + (2/3) · (1/n0 + 1/n1) · ln(2 ln(n)/δ) · R

where σ²_W is the variance of the whole window, n its width and R the value range
(the largest value seen so far; delays are ≥ 0). The oldest bucket is dropped and the
test repeated until no split differs significantly.

Extension (not in the paper): ``max_width`` bounds the window so that a stable stream
does not grow it forever; the oldest buckets beyond it are dropped.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pipeline.core.errors import ConfigError, OperatorInputError, OperatorStateError


@dataclass(frozen=True, slots=True)
class AdwinConfig:
    """Parameters of one ADWIN detector.

    delta: confidence δ of the cut test; max_buckets: M, buckets per level of the
    exponential histogram; clock: run the cut test every ``clock`` insertions;
    min_len: minimum items in each sub-window for a split to be tested;
    max_width: hard bound on the window width (items).
    """

    delta: float = 0.002
    max_buckets: int = 5
    clock: int = 32
    min_len: int = 16
    max_width: int = 20_000

    def __post_init__(self) -> None:
        if not 0.0 < self.delta < 1.0:
            raise ConfigError(f"adwin.delta: must be in (0, 1), got {self.delta}")
        if self.max_buckets < 2:
            raise ConfigError(f"adwin.max_buckets: must be >= 2, got {self.max_buckets}")
        if self.clock < 1:
            raise ConfigError(f"adwin.clock: must be >= 1, got {self.clock}")
        if self.min_len < 1:
            raise ConfigError(f"adwin.min_len: must be >= 1, got {self.min_len}")
        if self.max_width < 2 * self.min_len:
            raise ConfigError(
                f"adwin.max_width: must be >= 2*min_len={2 * self.min_len}, got {self.max_width}"
            )


# A bucket is (total, variance_sum): sum of its values and sum of squared deviations
# from its own mean. Its item count is implied by its level: 2**level.
_Bucket = tuple[float, float]


class Adwin:
    """ADWIN2 change detector; ``add(x)`` returns how many oldest items were dropped."""

    def __init__(self, config: AdwinConfig | None = None) -> None:
        self.config = config or AdwinConfig()
        # _levels[i] holds buckets of 2**i items, oldest on the left.
        self._levels: list[deque[_Bucket]] = []
        self._width = 0
        self._total = 0.0
        self._var = 0.0  # sum of squared deviations of the whole window
        self._range = 0.0
        self._since_check = 0
        self.changes = 0  # number of insertions after which a cut happened

    # ----------------------------------------------------------------- queries
    @property
    def width(self) -> int:
        """Number of items in the current window."""
        return self._width

    @property
    def mean(self) -> float:
        """Mean of the current window (0.0 when empty)."""
        return self._total / self._width if self._width else 0.0

    @property
    def variance(self) -> float:
        """Population variance of the current window (0.0 when empty)."""
        return self._var / self._width if self._width else 0.0

    # ----------------------------------------------------------------- updates
    def add(self, x: float) -> int:
        """Insert one value; return the number of oldest items dropped by cuts."""
        value = float(x)
        if value < 0.0 or math.isnan(value):
            raise OperatorInputError(f"adwin: values must be >= 0 and not NaN, got {x!r}")
        self._range = max(self._range, value)
        if self._width:
            mean = self._total / self._width
            self._var += self._width * (value - mean) ** 2 / (self._width + 1)
        self._width += 1
        self._total += value
        self._insert_bucket(0, (value, 0.0))
        dropped = 0
        while self._width > self.config.max_width:
            dropped += self._drop_oldest()
        self._since_check += 1
        if self._since_check >= self.config.clock:
            self._since_check = 0
            cut = self._cut()
            if cut:
                self.changes += 1
            dropped += cut
        return dropped

    def add_many(self, values: Iterable[float]) -> int:
        """:meth:`add` for each value in order (the same arithmetic, so the same
        window); returns the number of oldest items dropped in total. The running sums
        live in locals between the (rare) drops and the cut tests every ``clock`` items."""
        cfg = self.config
        buckets, clock, max_width = cfg.max_buckets, cfg.clock, cfg.max_width
        dropped = 0
        levels = self._levels
        rng, width, total, var, since = (self._range, self._width, self._total, self._var,
                                         self._since_check)
        for x in values:
            value = float(x)
            if not value >= 0.0:  # negative or NaN
                raise OperatorInputError(f"adwin: values must be >= 0 and not NaN, got {x!r}")
            if value > rng:
                rng = value
            if width:
                mean = total / width
                var += width * (value - mean) ** 2 / (width + 1)
            width += 1
            total += value
            if not levels:
                levels.append(deque())
            row = levels[0]
            row.append((value, 0.0))
            level = 0
            while len(row) > buckets:  # _insert_bucket's cascade, inlined
                s1, v1 = row.popleft()
                s2, v2 = row.popleft()
                n = float(1 << level)
                diff = s1 / n - s2 / n
                level += 1
                if level == len(levels):
                    levels.append(deque())
                row = levels[level]
                row.append((s1 + s2, v1 + v2 + n * n * diff * diff / (2 * n)))
            since += 1
            if width > max_width or since >= clock:
                self._range, self._width, self._total, self._var = rng, width, total, var
                while self._width > max_width:
                    dropped += self._drop_oldest()
                if since >= clock:
                    since = 0
                    cut = self._cut()
                    if cut:
                        self.changes += 1
                    dropped += cut
                levels = self._levels
                width, total, var = self._width, self._total, self._var
        self._range, self._width, self._total, self._var = rng, width, total, var
        self._since_check = since
        return dropped

    def _insert_bucket(self, level: int, bucket: _Bucket) -> None:
        while True:
            if level == len(self._levels):
                self._levels.append(deque())
            row = self._levels[level]
            row.append(bucket)
            if len(row) <= self.config.max_buckets:
                return
            s1, v1 = row.popleft()
            s2, v2 = row.popleft()
            n = float(1 << level)
            diff = s1 / n - s2 / n
            bucket = (s1 + s2, v1 + v2 + n * n * diff * diff / (2 * n))
            level += 1

    def _drop_oldest(self) -> int:
        """Remove the oldest bucket from the window; return its item count."""
        while self._levels and not self._levels[-1]:
            self._levels.pop()
        level = len(self._levels) - 1
        s, v = self._levels[level].popleft()
        nb = 1 << level
        rest = self._width - nb
        if rest == 0:
            self._width, self._total, self._var = 0, 0.0, 0.0
        else:
            mean_rest = (self._total - s) / rest
            mean_b = s / nb
            self._var -= v + nb * rest * (mean_b - mean_rest) ** 2 / self._width
            self._var = max(self._var, 0.0)
            self._width = rest
            self._total -= s
        while self._levels and not self._levels[-1]:
            self._levels.pop()
        return nb

    def _cut(self) -> int:
        """ADWIN2 cut test over bucket boundaries; drop oldest buckets while it fires."""
        dropped = 0
        min_len = self.config.min_len
        while self._width >= 2 * min_len:
            if not self._split_differs(min_len):
                break
            dropped += self._drop_oldest()
        return dropped

    def _split_differs(self, min_len: int) -> bool:
        n = self._width
        total = self._total
        ln_term = math.log(2.0 * math.log(n) / self.config.delta)
        var_w = self._var / n
        rng = self._range
        sqrt = math.sqrt
        n0, s0 = 0, 0.0
        for level in range(len(self._levels) - 1, -1, -1):
            size = 1 << level
            for s, _v in self._levels[level]:
                n0 += size
                s0 += s
                n1 = n - n0
                if n1 < min_len:
                    return False
                if n0 < min_len:
                    continue
                m_inv = 1.0 / n0 + 1.0 / n1
                eps = sqrt(2.0 * m_inv * var_w * ln_term) + (2.0 / 3.0 * m_inv * ln_term * rng)
                if abs(s0 / n0 - (total - s0) / n1) > eps:
                    return True
        return False

    # ---------------------------------------------------------------- snapshot
    def snapshot(self) -> dict[str, Any]:
        """Plain-Python state (picklable)."""
        return {
            "levels": [list(row) for row in self._levels],
            "width": self._width,
            "total": self._total,
            "var": self._var,
            "range": self._range,
            "since_check": self._since_check,
            "changes": self.changes,
        }

    @classmethod
    def from_snapshot(cls, config: AdwinConfig, snap: dict[str, Any]) -> Adwin:
        """Rebuild a detector from :meth:`snapshot` output."""
        try:
            det = cls(config)
            det._levels = [deque((float(s), float(v)) for s, v in row) for row in snap["levels"]]
            det._width = int(snap["width"])
            det._total = float(snap["total"])
            det._var = float(snap["var"])
            det._range = float(snap["range"])
            det._since_check = int(snap["since_check"])
            det.changes = int(snap["changes"])
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"adwin snapshot: bad or missing field: {exc}") from exc
        counted = sum(len(row) << i for i, row in enumerate(det._levels))
        if counted != det._width:
            raise OperatorStateError(
                f"adwin snapshot: buckets hold {counted} items but width is {det._width}"
            )
        return det
