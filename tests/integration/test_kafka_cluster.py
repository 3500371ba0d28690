"""`harvest kafka status|stop-node|start-node` on the session's three-node cluster
(``kafka_cluster``): replication, the per-node status, a node stopped and started again
while the others keep serving, and node ids that are not the cluster's (exit 2)."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from connectors.io.admin import ensure_topics, leader_of, partition_leaders
from connectors.io.producer import publish_encoded
from connectors.io.producer_config import ProducerConfig
from tests.conftest import KafkaCluster

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_topics_are_replicated_three_times_with_two_in_sync(
        kafka_cluster: KafkaCluster, topic_prefix: str) -> None:
    topic = f"{topic_prefix}.rf"
    ensure_topics(kafka_cluster.bootstrap, [topic], partitions=3)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    parts = admin.list_topics(topic, timeout=10).topics[topic].partitions
    assert {len(p.replicas) for p in parts.values()} == {3}
    config = admin.describe_configs([ConfigResource("topic", topic)])
    described = next(iter(config.values())).result()
    assert described["min.insync.replicas"].value == "2"
    # the leaders spread over the nodes, and status reports them
    leaders = partition_leaders(kafka_cluster.bootstrap)
    assert sorted(leaders) == [1, 2, 3]


def test_status_lists_every_node_with_pid_port_and_leaderships(
        kafka_cluster: KafkaCluster, topic_prefix: str) -> None:
    topic = f"{topic_prefix}.st"
    ensure_topics(kafka_cluster.bootstrap, [topic])
    leader = leader_of(kafka_cluster.bootstrap, topic)
    done = kafka_cluster.harvest("kafka", "status")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("kafka: cluster of 3 nodes (3 running)")
    assert kafka_cluster.bootstrap in lines[0]
    for node, port in enumerate(kafka_cluster.bootstrap.split(","), start=1):
        line = next(x for x in lines if x.strip().startswith(f"node {node}:"))
        assert port in line and "running (pid " in line
        assert (f"{topic}[0]" in line) == (node == leader)


def test_stop_node_and_start_node_while_the_others_serve(
        kafka_cluster: KafkaCluster, topic_prefix: str) -> None:
    topic = f"{topic_prefix}.fo"
    ensure_topics(kafka_cluster.bootstrap, [topic])
    leader = leader_of(kafka_cluster.bootstrap, topic)
    stopped = kafka_cluster.harvest("kafka", "stop-node", str(leader), "--kill")
    assert stopped.returncode == 0, stopped.stderr
    assert f"kafka: node {leader} killed (SIGKILL)" in stopped.stdout
    try:
        # acks=all with 2 of 3 replicas in sync: the records are delivered to a new leader
        report = publish_encoded([(topic, None, b"x%d" % i) for i in range(200)],
                                 config=ProducerConfig(bootstrap=kafka_cluster.bootstrap))
        report.raise_on_failure()
        assert leader_of(kafka_cluster.bootstrap, topic) != leader
        status = kafka_cluster.harvest("kafka", "status")
        assert status.returncode == 0
        assert f"node {leader}: " in status.stdout
        assert "(2 running)" in status.stdout
        again = kafka_cluster.harvest("kafka", "stop-node", str(leader))
        assert again.returncode == 0 and "was not running" in again.stdout
    finally:
        started = kafka_cluster.harvest("kafka", "start-node", str(leader), "--timeout", "120")
    assert started.returncode == 0, started.stdout + started.stderr[-2000:]
    assert "(3 running)" in started.stdout


@pytest.mark.parametrize("node", ["0", "4", "two", "-1"])
def test_node_ids_that_are_not_the_clusters_exit_2(kafka_cluster: KafkaCluster,
                                                   node: str) -> None:
    for action in ("stop-node", "start-node"):
        done = kafka_cluster.harvest("kafka", action, "--", node)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"node: '{node}' is not a node of the cluster (ids 1..3)" in done.stderr
        assert "Traceback" not in done.stderr
