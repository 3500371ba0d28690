"""The local cluster's pure parts: the record (node ids, voters, bootstrap), the rendered
node properties, and the launcher without a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.launch.broker_config import (
    BrokerConfig,
    Ports,
    quorum_voters,
    render_properties,
    replication_of,
)
from connectors.launch.cluster import ClusterStatus, LocalCluster, NodeStatus
from connectors.launch.cluster_layout import (
    ClusterLayout,
    ClusterRecord,
    check_nodes,
    cluster_is_up,
)
from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.settings import PROJECT_ROOT

RECORD = ClusterRecord(3, "abc", {1: Ports(9101, 9201), 2: Ports(9102, 9202),
                                  3: Ports(9103, 9203)})


def _parse(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines()
                if line and not line.startswith("#"))


@pytest.mark.parametrize(("nodes", "expected"), [(1, (1, 1)), (2, (2, 2)), (3, (3, 2)),
                                                 (5, (3, 2))])
def test_replication_is_min_3_n_and_min_isr_min_2_n(nodes: int, expected: tuple[int, int]
                                                    ) -> None:
    assert replication_of(nodes) == expected


def test_a_node_is_rendered_with_the_static_quorum_and_replication(tmp_path: Path) -> None:
    template = (PROJECT_ROOT / "infra" / "kafka" / "server.properties.template").read_text()
    props = _parse(render_properties(template, RECORD.ports[2], tmp_path, node_id=2,
                                     voters=RECORD.voters))
    assert props["node.id"] == "2"
    assert props["controller.quorum.voters"] == (
        "1@127.0.0.1:9201,2@127.0.0.1:9202,3@127.0.0.1:9203")
    assert "controller.quorum.bootstrap.servers" not in props
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9102,CONTROLLER://127.0.0.1:9202"
    for key in ("default.replication.factor", "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor"):
        assert props[key] == "3"
    assert props["min.insync.replicas"] == props["transaction.state.log.min.isr"] == "2"


def test_the_single_broker_still_renders_a_standalone_quorum(tmp_path: Path) -> None:
    template = (PROJECT_ROOT / "infra" / "kafka" / "server.properties.template").read_text()
    props = _parse(render_properties(template, Ports(9092, 9093), tmp_path))
    assert props["node.id"] == "1"
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:9093"
    assert props["default.replication.factor"] == props["min.insync.replicas"] == "1"


def test_record_bootstrap_voters_and_round_trip(tmp_path: Path) -> None:
    assert RECORD.bootstrap == "127.0.0.1:9101,127.0.0.1:9102,127.0.0.1:9103"
    assert quorum_voters(RECORD.voters).startswith("1@127.0.0.1:9201,")
    path = tmp_path / "cluster.json"
    RECORD.save(path)
    assert ClusterRecord.load(path) == RECORD
    assert ClusterRecord.load(tmp_path / "none.json") is None
    path.write_text("{")
    with pytest.raises(InfraError, match="damaged cluster record"):
        ClusterRecord.load(path)


@pytest.mark.parametrize("value", ["0", "4", "x", "", "1.5", -2])
def test_bad_node_ids_name_the_field(value: object) -> None:
    with pytest.raises(ConfigError, match=r"^node: .* is not a node of the cluster \(ids 1..3\)"):
        RECORD.node(value)


def test_good_node_ids() -> None:
    assert [RECORD.node(v) for v in ("1", " 2", 3)] == [1, 2, 3]


@pytest.mark.parametrize("nodes", [0, 6])
def test_cluster_size_is_checked(nodes: int) -> None:
    with pytest.raises(ConfigError, match=r"--brokers: must be in 1..5"):
        check_nodes(nodes)


def test_cluster_is_up_only_between_up_and_down(tmp_path: Path) -> None:
    layout = ClusterLayout(tmp_path)
    assert cluster_is_up(tmp_path) is None
    RECORD.save(layout.record_file)
    assert cluster_is_up(tmp_path) is None
    ClusterRecord(**{**RECORD.__dict__, "up": True}).save(layout.record_file)
    assert cluster_is_up(tmp_path) is not None


def _launcher(tmp_path: Path) -> LocalCluster:
    return LocalCluster(BrokerConfig(kafka_dir=tmp_path / "kafka", jars_dir=tmp_path / "jars",
                                     infra_dir=PROJECT_ROOT / "infra"))


def test_node_actions_without_a_cluster_say_how_to_start_one(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path)
    assert not launcher.status().running
    assert launcher.down() is False
    for act in (lambda: launcher.stop_node("1"), lambda: launcher.start_node("1")):
        with pytest.raises(ConfigError, match=r"node: no cluster is up .*--brokers 3"):
            act()


def test_a_cluster_with_another_node_count_is_not_reused(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path)
    RECORD.save(launcher.layout.record_file)
    launcher.layout.node_dir(1).mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"--brokers: the cluster under .* has 3 nodes, not 2"):
        launcher._new_record(2)
    assert launcher._new_record(3) == RECORD


def test_a_new_record_gets_distinct_free_ports(tmp_path: Path) -> None:
    record = _launcher(tmp_path)._new_record(3)
    ports = [p for node in record.ports.values() for p in (node.broker, node.controller)]
    assert len(set(ports)) == 6 and sorted(record.ports) == [1, 2, 3]


def test_status_describes_each_node() -> None:
    status = ClusterStatus(True, RECORD.bootstrap, (
        NodeStatus(1, 9101, 42, (("t.in.a", 0), ("__consumer_offsets", 0))),
        NodeStatus(2, 9102, None, ()),
        NodeStatus(3, 9103, 43, None),
    ), answering=True)
    text = status.describe().splitlines()
    assert text[0].startswith("kafka: cluster of 3 nodes (2 running); bootstrap 127.0.0.1:9101,")
    assert text[1] == ("  node 1: 127.0.0.1:9101 running (pid 42); leads 2 partitions "
                       "(1 of user topics: t.in.a[0])")
    assert text[2] == "  node 2: 127.0.0.1:9102 stopped; leads 0 partitions (0 of user topics)"
    assert text[3].endswith("leads ?")
    assert status.running


def test_a_secure_node_keeps_the_quorum_and_shares_the_clusters_tls(tmp_path: Path) -> None:
    from connectors.launch import secure as sec

    layout = ClusterLayout(tmp_path / "kafka")
    launcher = _launcher(tmp_path)
    record = ClusterRecord(**{**RECORD.__dict__, "secure": True})
    node = launcher.node(record, 3)
    assert node.config.secure_layout == layout.secure_layout
    assert node.config.data_dir == layout.node_dir(3) / "secure-data"
    assert layout.secure_layout.clients_dir == tmp_path / "kafka" / "clients"
    node.config.kafka_dir.mkdir(parents=True)
    node._render(record.ports[3], sec.Credentials.generate())
    props = _parse(node.config.properties_file.read_text())
    assert props["node.id"] == "3"
    assert props["controller.quorum.voters"].count("@127.0.0.1:") == 3
    assert props["listeners"] == "SASL_SSL://127.0.0.1:9103,CONTROLLER://127.0.0.1:9203"
    assert props["ssl.keystore.location"] == str(layout.secure_layout.keystore)
