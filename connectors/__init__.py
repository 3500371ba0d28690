"""Kafka + Avro I/O at the edge of the system: serde, producer, consumer, topics, workloads."""
