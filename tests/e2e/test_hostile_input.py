"""Hostile input, nothing lost (ARCHITECTURE §7): a foreign producer interleaves over
1,000 bad records of every kind into a valid sensor workload — undecodable bytes, NaN and
±Inf in the joined attribute, tuples 50 years ahead of the stream (one of them the very
first record, one in the middle, a burst of 40 of one stream and segment, and one among
each instance's first tuples), tuples far behind it, arrival before event, and exact
duplicates of valid records (one among each instance's first tuples too). Every bad
record but the duplicates lands in the dead-letter topic with a reason naming its rule
and its bytes; the duplicates are dropped and counted in the metrics; the job keeps
running; the results, deduplicated by id, equal the oracle over the valid records; and
every record is accounted for: each metrics row of each instance has
``records_in == accepted + dead_lettered + duplicates_dropped`` (plus what the
validator's warm-up holds), and at the end each instance was given exactly the copies
ATR routes to it, none held."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed
from connectors.io.topics import deadletter_topic, input_topic, metrics_topic, results_topic
from pipeline.core.settings import Settings
from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.quality.oracle import oracle
from pipeline.spec.model import Spec
from pipeline.testing.streams import exact_spec, max_delay
from tests.e2e.conftest import SERDE, publish, read_topic, run_job, workload

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e, pytest.mark.slow]

BAND = {"streams": ["s1", "s2", "s3"], "window_ms": 1500, "predicate": "band",
        "attribute": "value", "epsilon": 0.3}
YEAR_MS = 365 * 24 * 3600 * 1000
PER_KIND = 150
#: far-future records of one stream and segment in a row (more than the validator's
#: clock_size: a batch sorted by arrival once took such a run as a jump of the stream)
BURST = 40
#: kind → the reason's first words (the rule it names)
RULES = {
    "undecodable": "undecodable sensor_reading body",
    "nan": "non-finite value NaN in attribute 'value'",
    "inf": "non-finite value",
    "future": "future: arrival_time",
    "future_arrival": "future: arrival_time",
    "late": "late: event_time",
    "arrival_before_event": "arrival_time",
}


def _bad(kind: str, near: dict[str, Any], n: int, shift_ms: int = 0) -> bytes:
    """A bad record of ``kind`` shaped like the valid record ``near`` (a fresh seq); a
    far-future one ``shift_ms`` further on (to pick the ATR segment, so its owner)."""
    rec = dict(near, seq=1_000_000 + n)
    if kind == "undecodable":
        return SERDE.encode("sensor_reading", rec)[:-5]
    if kind == "nan":
        rec["value"] = math.nan
    elif kind == "inf":
        rec["value"] = math.inf if n % 2 else -math.inf
    elif kind == "future":  # 50 years ahead, event and arrival
        rec["event_time"] = rec["arrival_time"] = (near["arrival_time"] + 50 * YEAR_MS + n
                                                   + shift_ms)
    elif kind == "future_arrival":  # an hour ahead on arrival only
        rec["arrival_time"] = near["arrival_time"] + 3_600_000 + n
    elif kind == "late":  # 10 s behind its arrival: far past W + K
        rec["event_time"] = near["arrival_time"] - 10_000 - n
    elif kind == "arrival_before_event":
        rec["arrival_time"] = rec["event_time"] - 1 - n
    return SERDE.encode("sensor_reading", rec)


def _segment_shift(router: Router, near: dict[str, Any], instance: int) -> int:
    """How far past ``near`` + 50 years a far-future record must be for ``instance`` to
    own its segment."""
    cfg = router.config
    base = near["arrival_time"] + 50 * YEAR_MS
    return next(k * cfg.segment_ms for k in range(cfg.groups)
                if router.owns(instance, base + k * cfg.segment_ms))


def _firsts(records: list[dict[str, Any]], router: Router) -> dict[int, list[tuple[str, Any]]]:
    """Bad records among each instance's first tuples: after its second valid tuple, a
    duplicate of it and a far-future record the instance owns."""
    streams = {s: i for i, s in enumerate(("s1", "s2", "s3"))}
    seen: dict[int, int] = {}
    slots: dict[int, list[tuple[str, Any]]] = {}
    for i, rec in enumerate(records):
        for g in router.route_keys(streams[rec["stream"]], rec["event_time"], rec):
            seen[g] = seen.get(g, 0) + 1
            if seen[g] == 2:
                slots.setdefault(i, []).extend([("dup", i), ("future", ("owner", g))])
        if len(seen) == router.config.groups and min(seen.values()) >= 2:
            break
    return slots


def hostile(records: list[dict[str, Any]], prefix: str, seed: int, router: Router
            ) -> tuple[list[tuple[str, bytes | None, bytes]], dict[bytes, str], int]:
    """The valid records in arrival order with the bad ones interleaved; returns the
    messages, bad bytes → kind, and how many exact duplicates were added."""
    rng = random.Random(seed)
    n = len(records)
    slots = _firsts(records, router)
    for kind in RULES:
        lo = next(i for i, r in enumerate(records) if r["arrival_time"] > 12_000) if (
            kind == "late") else 0
        for _ in range(PER_KIND):
            slots.setdefault(rng.randrange(lo, n), []).append((kind, None))
    for _ in range(PER_KIND):  # exact duplicates, a few records after their original
        i = rng.randrange(0, int(n * 0.8))
        slots.setdefault(min(n - 1, i + rng.randrange(1, 20)), []).append(("dup", i))
    slots.setdefault(n // 2, []).insert(0, ("future", None))  # one right in the middle
    slots.setdefault(n // 3, []).append(("burst", None))
    topic = {s: input_topic(prefix, "sensors", s) for s in ("s1", "s2", "s3")}
    first = records[0]
    bad: dict[bytes, str] = {}
    raw = _bad("future", first, 0)  # the very first record of the run
    bad[raw] = "future"
    messages: list[tuple[str, bytes | None, bytes]] = [(topic[first["stream"]], b"x", raw)]
    dups = 0
    for i, rec in enumerate(records):
        messages.append((topic[rec["stream"]], rec["stream"].encode(),
                         SERDE.encode("sensor_reading", rec)))
        for kind, orig in slots.get(i, []):
            if kind == "dup":
                o = records[orig]
                messages.append((topic[o["stream"]], o["stream"].encode(),
                                 SERDE.encode("sensor_reading", o)))
                dups += 1
                continue
            for stream, raw in _bad_records(kind, orig, rec, len(bad), router):
                bad[raw] = "future" if kind == "burst" else kind
                messages.append((topic[stream], b"x", raw))
    return messages, bad, dups


def _bad_records(kind: str, orig: Any, near: dict[str, Any], n: int, router: Router
                 ) -> list[tuple[str, bytes]]:
    """The stream and bytes of the bad records of one slot, the first the ``n``-th:
    ``orig`` = ("owner", g) makes a far-future record instance g owns; a ``burst`` is
    :data:`BURST` far-future records of stream s1 in one segment, 1 ms apart."""
    if kind == "burst":
        start = near["arrival_time"] + 50 * YEAR_MS + n
        align = -start % router.config.segment_ms  # from the start of a segment on
        return [("s1", _bad("future", dict(near, stream="s1"), n + k, align))
                for k in range(BURST)]
    if isinstance(orig, tuple):
        return [(near["stream"], _bad(kind, near, n, _segment_shift(router, near, orig[1])))]
    return [(near["stream"], _bad(kind, near, n))]


#: bad kinds Spark SQL rejects while decoding: they never reach an instance
DECODE_REJECTED = ("undecodable", "nan", "inf", "arrival_before_event")


def routed_copies(messages: list[tuple[str, bytes | None, bytes]], bad: dict[bytes, str],
                  router: Router, spec: Spec) -> dict[str, int]:
    """The rows ATR gives each instance (by name): every decodable record's copies."""
    streams = {s: i for i, s in enumerate(spec.join.streams)}
    copies: Counter[str] = Counter()
    for _, _, raw in messages:
        if bad.get(raw) in DECODE_REJECTED:
            continue
        _, rec = SERDE.decode(raw)
        for g in router.route_keys(streams[rec["stream"]], int(rec["event_time"]), rec):
            copies[str(g)] += 1
    return dict(copies)


def assert_accounted(rows: dict[str, list[dict[str, float]]], expected: dict[str, int]
                     ) -> None:
    """Every metrics row of every instance balances (the warm-up's holds are the only
    difference); at the end each instance was given its routed copies, decided them
    all and holds nothing."""
    assert set(rows) == set(expected), (sorted(rows), sorted(expected))
    for instance, extras in rows.items():
        for x in extras:
            assert x["records_in"] == (x["accepted"] + x["dead_lettered"]
                                       + x["duplicates_dropped"] + x["validator_held"]), x
        last = max(extras, key=lambda x: (x["records_in"], -x["held"]))
        assert last["records_in"] == expected[instance], (instance, last)
        assert last["records_in"] == (last["accepted"] + last["dead_lettered"]
                                      + last["duplicates_dropped"]), last
        assert last["held"] == 0 and last["validator_held"] == 0, last


def test_hostile_input_reaches_the_dead_letters_and_results_equal_oracle(
    spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
    tmp_path: Path,
) -> None:
    records = workload("sensors", rate=40.0, duration_s=30.0, disorder="exp:mean=150",
                       seed=5)
    spec = exact_spec(BAND, max_delay(records), {
        "workload": "sensors", "routing": "atr", "groups": 2, "segment_ms": 2000,
        "max_offsets_per_trigger": 1500})
    router = Router(RouterConfig.from_spec(spec))
    messages, bad, dups = hostile(records, topic_prefix, seed=5, router=router)
    assert len(bad) >= 1000 and set(bad.values()) == set(RULES)
    publish(kafka_bootstrap, messages)

    report = run_job(spark, spec, job_settings, topic_prefix, tmp_path / "ck")
    assert report.stopped.startswith("idle")
    assert report.input_rows == len(messages)

    # every bad record (duplicates aside) is a dead letter naming its rule, with its bytes
    dead = [d for d in read_topic(kafka_bootstrap, deadletter_topic(topic_prefix))]
    assert all(isinstance(d, Consumed) for d in dead)
    got = Counter(bytes(d.record["raw"]) for d in dead if isinstance(d, Consumed))
    assert set(got) == set(bad), (len(set(bad) - set(got)), len(set(got) - set(bad)))
    assert max(got.values()) == 1  # each once, though ATR copies tuples to two instances
    for d in dead:
        assert isinstance(d, Consumed)
        kind = bad[bytes(d.record["raw"])]
        assert d.record["reason"].startswith(RULES[kind]), (kind, d.record["reason"])
        assert d.record["topic"].startswith(f"{topic_prefix}.in.sensors.")
        assert d.record["offset"] >= 0
    assert report.deadletters == len(bad)

    # the exact duplicates were dropped and counted (cumulative per instance)
    counted: dict[str, float] = {}
    rows: dict[str, list[dict[str, float]]] = {}
    for m in read_topic(kafka_bootstrap, metrics_topic(topic_prefix)):
        assert isinstance(m, Consumed)
        extra = m.record["extra"]
        counted[m.record["instance"]] = max(counted.get(m.record["instance"], 0.0),
                                            float(extra.get("validator_duplicates", 0.0)))
        rows.setdefault(m.record["instance"], []).append(extra)
    assert sum(counted.values()) >= dups  # a tuple copied to both instances counts twice
    assert_accounted(rows, routed_copies(messages, bad, router, spec))

    # the valid results are the oracle's, none invented by the far-future tuples
    ids: Counter[str] = Counter()
    for r in read_topic(kafka_bootstrap, results_topic(topic_prefix)):
        assert isinstance(r, Consumed)
        ids[str(r.record["id"])] += 1
    truth = {r.id for r in oracle(spec.join, records)}
    assert truth
    assert set(ids) == truth
    assert max(ids.values()) == 1
    json.dumps(report.to_json())
