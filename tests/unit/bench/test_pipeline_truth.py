"""The sweep's compact truth (bench/pipeline/truth.py) against the oracle's results."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.kit.readback import completed_at
from bench.pipeline.truth import TrueResults
from pipeline.quality.oracle import oracle, oracle_members
from pipeline.testing.streams import make_dump, make_spec


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), m=st.integers(2, 3),
       predicate=st.sampled_from(["band", "distance", "cosine"]),
       known=st.floats(0.5, 1.0))
def test_true_results_are_the_oracle_by_id_members_and_completion(
        seed: int, m: int, predicate: str, known: float) -> None:
    """Ids, members and completion times equal the oracle's results read one by one
    (:func:`~bench.kit.readback.completed_at`), some members' append times unknown."""
    spec = make_spec(m, predicate, [150] * m)
    dump = make_dump(seed, m, {2: 25, 3: 12}[m], max_delay=50)
    expected = {r.id: [(x.stream, x.seq) for x in r.members] for r in oracle(spec.join, dump)}
    truth = TrueResults.of_members(spec.join.streams, oracle_members(spec.join, dump))
    assert len(truth) == len(expected)
    assert sorted(truth) == sorted(expected)
    assert all(truth[rid] == keys for rid, keys in expected.items())
    assert "0" * 32 not in truth and 17 not in truth
    rng = np.random.default_rng(seed)
    appended = {(str(r["stream"]), int(r["seq"])): 1_000 + int(r["event_time"])
                for r in dump if rng.random() < known}
    got = dict(zip(truth, truth.completed(appended).tolist(), strict=True))
    for rid, keys in expected.items():
        want = completed_at(keys, appended)
        assert (np.isnan(got[rid]) if want is None else got[rid] == want)


def test_a_mapping_reads_as_true_results() -> None:
    truth = TrueResults.of_mapping({"b": [("s1", 2), ("s2", 5)], "a": [("s1", 1)]})
    assert list(truth) == ["a", "b"] and truth["b"] == [("s1", 2), ("s2", 5)]
    assert truth["a"] == [("s1", 1)]
    done = dict(zip(truth, truth.completed({("s1", 1): 10, ("s1", 2): 30}).tolist(),
                    strict=True))
    assert done["a"] == 10.0 and np.isnan(done["b"])
    assert len(TrueResults.of_mapping({})) == 0
