"""After a chaos run: what the producer says it sent, what the input topics hold, and the
results a read_committed consumer sees, against the oracle over the input."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.chaos.plan import Chaos
from pipeline.core.jsonl import read_jsonl
from pipeline.core.procs import Child
from pipeline.core.settings import Settings

_SENT = re.compile(r"sent ([\d,]+)\s+delivered ([\d,]+)\s+failed ([\d,]+)")


@dataclass(frozen=True)
class Outcome:
    """The run's accounting (see the package docstring)."""

    generated: int
    producer_sent: int
    producer_failed: int
    held: int
    records_lost: int
    input_duplicates: int
    results: int
    oracle_results: int
    duplicates_read_committed: int
    results_equal_oracle: bool


def _producer_counts(producer: Child) -> tuple[int, int]:
    """(sent, failed) from `harvest produce`'s summary line (-1, -1: none printed)."""
    text = "\n".join(producer.stdout_lines())  # the summary goes to stderr
    if producer.stderr_path.exists():
        text += "\n" + producer.stderr_path.read_text(errors="replace")
    found = _SENT.search(text)
    if found is None:
        return -1, -1
    sent, _, failed = (int(g.replace(",", "")) for g in found.groups())
    return sent, failed


def _read(bootstrap: str, topic: str, settings: Settings, committed: bool) -> list[Any]:
    from connectors.io.consumer import Consumed, ConsumerConfig, consume
    from connectors.io.serde import AvroSerde

    cfg = ConsumerConfig(bootstrap=bootstrap, from_beginning=True, until_end=True,
                         idle_timeout_s=10.0, read_committed=committed)
    items = consume([topic], config=cfg, serde=AvroSerde.from_dir(settings.schemas_dir))
    return [i.record for i in items if isinstance(i, Consumed)]


def read_back(chaos: Chaos, bootstrap: str, settings: Settings, producer: Child) -> Outcome:
    """Read the input and results topics back and compare with the oracle."""
    from connectors.io.topics import input_topic, results_topic
    from pipeline.quality.oracle import oracle

    wanted = {(r["stream"], r["seq"]) for r in read_jsonl(chaos.dump)}
    held = [r for s in ("s1", "s2", "s3")
            for r in _read(bootstrap, input_topic(chaos.prefix, "sensors", s), settings, False)]
    keys = Counter((r["stream"], r["seq"]) for r in held)
    distinct = list({(r["stream"], r["seq"]): r for r in held}.values())
    truth = {r.id for r in oracle(chaos.spec.join, distinct)}
    got = Counter(str(r["id"]) for r in _read(bootstrap, results_topic(chaos.prefix),
                                              settings, True))
    sent, failed = _producer_counts(producer)
    return Outcome(
        generated=len(wanted), producer_sent=sent, producer_failed=failed,
        held=len(held), records_lost=len(wanted - set(keys)),
        input_duplicates=sum(n - 1 for n in keys.values()),
        results=len(got), oracle_results=len(truth),
        duplicates_read_committed=sum(n - 1 for n in got.values()),
        results_equal_oracle=set(got) == truth,
    )
