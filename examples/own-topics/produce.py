#!/usr/bin/env python3
"""Write example weather readings to your Kafka: weather.north and weather.south as Avro
single-object encoding, weather.east as JSON — plain confluent-kafka and fastavro, as
any other service would (no harvest code).

    python examples/own-topics/produce.py --seconds 60
    harvest submit --spec examples/own-topics/spec.toml --until-idle 20

Each topic gets 3 partitions. A reading reaches Kafka a little after it was measured
(the record's CreateTime timestamp is the arrival time). The stations measure the same
slowly changing temperature, each with its own error, so some readings of the three lie
within 0.3 degrees of each other.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import time
from pathlib import Path

import fastavro

HERE = Path(__file__).resolve().parent
STREAMS = {"north": "avro", "south": "avro", "east": "json"}


def bootstrap_default() -> str:
    """HARVEST_BOOTSTRAP_SERVERS, else the local broker's address, else 127.0.0.1:9092."""
    if os.environ.get("HARVEST_BOOTSTRAP_SERVERS"):
        return os.environ["HARVEST_BOOTSTRAP_SERVERS"]
    record = HERE.parents[1] / ".cache" / "kafka" / "bootstrap"
    return record.read_text().strip() if record.exists() else "127.0.0.1:9092"


def single_object(schema: dict, record: dict) -> bytes:
    """Avro single-object encoding: C3 01, the CRC-64-AVRO fingerprint, the body."""
    canonical = fastavro.schema.to_parsing_canonical_form(schema)
    fp = bytes.fromhex(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"))
    body = io.BytesIO()
    fastavro.schemaless_writer(body, schema, record)
    return b"\xc3\x01" + fp + body.getvalue()


def readings(seconds: float, rate: float, seed: int) -> list[tuple[int, str, int, bytes]]:
    """(arrival ms, stream, partition, value) for every reading, in arrival order."""
    schema = fastavro.parse_schema(json.loads((HERE / "station.avsc").read_text()))
    rng = random.Random(seed)
    start = int(time.time() * 1000) - int(seconds * 1000)
    out = []
    for stream, fmt in STREAMS.items():
        for i in range(int(seconds * rate)):
            ts = start + int(i * 1000 / rate) + rng.randint(0, 50)
            # the region's temperature (slow), seen by each station with its own error
            temp = 12.0 + 3.0 * math.sin(2 * math.pi * ts / 300_000) + rng.gauss(0, 1.0)
            rec = {"station": f"{stream}-{i % 3}", "ts": ts, "temp_c": round(temp, 2),
                   "wind_kmh": None if i % 4 == 0 else round(rng.uniform(0, 30), 1)}
            value = (single_object(schema, rec) if fmt == "avro"
                     else json.dumps(rec).encode())
            arrival = ts + int(rng.expovariate(1 / 300))  # a few hundred ms late
            out.append((arrival, stream, i % 3, value))
    out.sort()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", default=bootstrap_default())
    p.add_argument("--seconds", type=float, default=60.0, help="stream time to write")
    p.add_argument("--rate", type=float, default=2.0, help="readings per second per station")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dry-run", action="store_true", help="only count the readings")
    args = p.parse_args()
    rows = readings(args.seconds, args.rate, args.seed)
    if args.dry_run:
        print(json.dumps({"readings": len(rows), "topics": [f"weather.{s}" for s in STREAMS]}))
        return
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    missing = [f"weather.{s}" for s in STREAMS
               if f"weather.{s}" not in admin.list_topics(timeout=10).topics]
    for future in admin.create_topics([NewTopic(t, num_partitions=3, replication_factor=1)
                                       for t in missing]).values():
        future.result()
    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True,
                         "linger.ms": 20})
    for arrival, stream, partition, value in rows:
        producer.produce(f"weather.{stream}", value=value, partition=partition,
                         timestamp=arrival)
        producer.poll(0)
    left = producer.flush(30)
    print(json.dumps({"readings": len(rows), "undelivered": left,
                      "topics": [f"weather.{s}" for s in STREAMS]}))
    raise SystemExit(1 if left else 0)


if __name__ == "__main__":
    main()
