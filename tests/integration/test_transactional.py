"""The transactional sink against the real broker (ARCHITECTURE §4): a committed batch is
read back as the last committed one; a new producer with the same transactional id
fences the old one and aborts its open transaction, so the last stable offset reaches
the end; read_committed consumers never see the aborted records, read_uncommitted ones
do."""

from __future__ import annotations

from collections import Counter

import pytest

from connectors.io.admin import ensure_topics
from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.serde import AvroSerde
from connectors.io.transactional import (
    TransactionalConfig,
    TransactionalSink,
    last_stable_offsets,
    read_last_committed,
)
from pipeline.core.errors import DeliveryError
from pipeline.core.settings import PROJECT_ROOT

pytestmark = pytest.mark.kafka

SERDE = AvroSerde.from_dir(PROJECT_ROOT / "schemas")


def dead(i: int) -> bytes:
    """A small valid record (a dead letter) whose ``offset`` field is ``i``."""
    return SERDE.encode("dead_letter", {"reason": "r", "topic": "t", "partition": 0,
                                        "offset": i, "raw": b"", "time": 0})


def offsets(bootstrap: str, topic: str, read_committed: bool) -> Counter[int]:
    cfg = ConsumerConfig(bootstrap=bootstrap, from_beginning=True, until_end=True,
                         idle_timeout_s=5.0, read_committed=read_committed)
    return Counter(int(c.record["offset"]) for c in consume([topic], config=cfg, serde=SERDE)
                   if isinstance(c, Consumed))


def test_fence_abort_and_read_back(kafka_bootstrap: str, topic_prefix: str) -> None:
    out = f"{topic_prefix}.results"
    ensure_topics(kafka_bootstrap, [out])
    cfg = TransactionalConfig(bootstrap=kafka_bootstrap, transactional_id=f"t-{topic_prefix}",
                              commits_topic=f"{out}.commits", sink_id="query-1",
                              transaction_timeout_ms=600_000)
    first = TransactionalSink(cfg)
    assert first.open() is None
    first.write(0, [out] * 3, [b"a", b"b", b"c"], [dead(0), dead(1), dead(2)])
    first.write(1, [out], [b"d"], [dead(3)])
    assert read_last_committed(cfg) == 1

    # a crash mid-transaction: records on the broker, no commit
    first.begin()
    first.send([out] * 2, [b"e", b"f"], [dead(4), dead(5)])
    first.flush()
    (lso, hw), = last_stable_offsets(kafka_bootstrap, out).values()
    assert lso < hw  # the open transaction holds read_committed readers back

    second = TransactionalSink(cfg)  # the restarted driver: same transactional id
    assert second.open() == 1
    (lso, hw), = last_stable_offsets(kafka_bootstrap, out).values()
    assert lso == hw  # aborted by init_transactions, long before its 10-minute timeout
    with pytest.raises(DeliveryError, match="fenced"):
        first.commit(2, 2)
    second.write(2, [out] * 2, [b"e", b"f"], [dead(4), dead(5)])
    second.close()

    assert offsets(kafka_bootstrap, out, read_committed=True) == Counter(range(6))
    uncommitted = offsets(kafka_bootstrap, out, read_committed=False)
    assert uncommitted[4] == uncommitted[5] == 2  # the aborted copies are still in the log
    # another sink id on the same commits topic has its own last batch
    other = TransactionalConfig(bootstrap=kafka_bootstrap, transactional_id=f"u-{topic_prefix}",
                                commits_topic=f"{out}.commits", sink_id="query-2")
    assert read_last_committed(other) is None
    assert read_last_committed(cfg) == 2
