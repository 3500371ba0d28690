"""What a run's probes see of the run's own rows (``run_rows_seen``) against the dense
count it replaces: every (probe, row) pair compared."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.join.run_side import Side, run_rows_seen


def _dense(q_pos: np.ndarray, q_ts: np.ndarray, pos: np.ndarray, lo: np.ndarray) -> np.ndarray:
    return ((q_pos[None, :] < pos[:, None]) & (q_ts[None, :] >= lo[:, None])).sum(axis=1)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 60), late=st.floats(0.0, 1.0), window=st.integers(0, 40),
       data=st.data())
def test_run_rows_seen_equals_the_dense_count(n: int, late: float, window: int,
                                              data: st.DataObject) -> None:
    """Runs in ts order, with a share ``late`` of rows sent back in time (out of order),
    probes anywhere in the run: the same counts as every pair compared."""
    run = data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    ts = np.cumsum(np.array(run, np.int64)) if n else np.zeros(0, np.int64)
    back = data.draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    flip = data.draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
    ts = ts - np.where(np.array(flip) < late, np.array(back, np.int64), 0) if n else ts
    mine = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    q_pos = np.flatnonzero(mine).astype(np.int64) if n else np.zeros(0, np.int64)
    pos = np.flatnonzero(~mine).astype(np.int64) if n else np.zeros(0, np.int64)
    side = Side((), q_pos, ts[q_pos], q_pos, np.zeros((q_pos.shape[0], 1)))
    lo = ts[pos] - window
    got = run_rows_seen(side, pos, lo)
    assert got.tolist() == _dense(q_pos, ts[q_pos], pos, lo).tolist()


def test_run_rows_seen_splits_sorted_rows_from_stragglers() -> None:
    """A hand case: rows at ts 10, 20, 5 (a straggler), 30; a probe after all of them with
    lo = 8 sees 10, 20, 30, not the straggler; one after the first two with lo = 15 sees 20."""
    q_pos = np.array([0, 1, 2, 3], np.int64)
    side = Side((), q_pos, np.array([10, 20, 5, 30], np.int64), q_pos, np.zeros((4, 1)))
    got = run_rows_seen(side, np.array([9, 2], np.int64), np.array([8, 15], np.int64))
    assert got.tolist() == [3, 1]
