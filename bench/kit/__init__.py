"""What every benchmark shares: the local Kafka broker (:mod:`~bench.kit.broker`), the Spark
session (:mod:`~bench.kit.spark`), the wait for a query's first micro-batch
(:mod:`~bench.kit.progress`), the `harvest produce` child (:mod:`~bench.kit.producer`),
a run read back from Kafka (:mod:`~bench.kit.readback`), the JSON and PNG output
(:mod:`~bench.kit.output`) and the output ratios over baselines (:mod:`~bench.kit.ratios`,
GrubJoin's measure: Gedik et al., TKDE, §VI).

Imports nothing from a benchmark package; every benchmark may import from here.
"""

from bench.kit.broker import answering_broker, kafka_up
from bench.kit.output import RESULTS_DIR, machine_info, save_figure, write_json
from bench.kit.producer import start_producer
from bench.kit.progress import wait_first_progress
from bench.kit.ratios import add_baseline_ratios
from bench.kit.readback import (
    MemberKey,
    appended_at,
    completed_at,
    completions,
    completions_from,
    latencies_ms,
    member_keys,
    our_id,
    read_topic,
)
from bench.kit.spark import session_config, spark_session

__all__ = [
    "RESULTS_DIR", "MemberKey", "add_baseline_ratios", "answering_broker", "appended_at",
    "completed_at", "completions", "completions_from", "kafka_up", "latencies_ms",
    "machine_info", "member_keys", "our_id", "read_topic", "save_figure", "session_config",
    "spark_session", "start_producer", "wait_first_progress", "write_json",
]
