"""docker-compose.yml (no Docker engine here): services, images, ports, and that every
command is a real CLI entry point whose flags the `harvest` parser accepts."""

from __future__ import annotations

import argparse
from typing import Any

import pytest
import yaml

from pipeline.cli.main import build_parser
from pipeline.core.settings import PROJECT_ROOT
from pipeline.spec.model import load_spec

COMPOSE = PROJECT_ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("harvest parser has no subcommands")


def _host_ports(service: dict[str, Any]) -> set[int]:
    return {int(str(p).split(":")[0]) for p in service.get("ports", [])}


def test_services_present(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == {"kafka", "spark-master", "spark-worker", "producer", "job"}


def test_official_images_and_versions(services: dict[str, dict[str, Any]]) -> None:
    assert services["kafka"]["image"].startswith("apache/kafka:4.")
    assert services["spark-master"]["image"] == "apache/spark:4.2.0"
    pyproject = (PROJECT_ROOT / "pyproject.toml").read_text()
    assert '"pyspark[sql,connect]==4.2.0"' in pyproject  # worker's Spark = master's Spark


def test_kafka_is_kraft_with_internal_and_host_listeners(
    services: dict[str, dict[str, Any]],
) -> None:
    kafka = services["kafka"]
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert "INTERNAL://kafka:19092" in env["KAFKA_ADVERTISED_LISTENERS"]
    assert "EXTERNAL://localhost:9092" in env["KAFKA_ADVERTISED_LISTENERS"]
    assert 9092 in _host_ports(kafka)
    assert "kafka:19092" in kafka["healthcheck"]["test"]


def test_ports(services: dict[str, dict[str, Any]]) -> None:
    assert {7077, 8080} <= _host_ports(services["spark-master"])
    assert 8081 in _host_ports(services["spark-worker"])
    assert 4040 in _host_ports(services["job"])


def test_spark_processes_are_the_standalone_daemons(services: dict[str, dict[str, Any]]) -> None:
    master = services["spark-master"]["command"]
    assert master[1] == "org.apache.spark.deploy.master.Master"
    assert master[master.index("--port") + 1] == "7077"
    worker = services["spark-worker"]["command"]
    assert worker[:3] == ["spark-class", "org.apache.spark.deploy.worker.Worker",
                          "spark://spark-master:7077"]


@pytest.mark.parametrize("name", ["producer", "job", "spark-worker"])
def test_repo_image_clients_reach_kafka_inside_the_network(
    services: dict[str, dict[str, Any]], name: str
) -> None:
    service = services[name]
    assert service["build"]["context"] == "."
    assert (PROJECT_ROOT / service["build"]["dockerfile"]).is_file()
    assert service["environment"]["HARVEST_BOOTSTRAP_SERVERS"] == "kafka:19092"


def test_producer_runs_a_valid_harvest_produce(services: dict[str, dict[str, Any]]) -> None:
    command = services["producer"]["command"]
    assert command[:2] == ["harvest", "produce"]
    assert "produce" in _subcommands()
    args = build_parser().parse_args(command[1:])  # argparse exits 2 on a bad flag
    assert args.workload == "sensors"
    assert services["producer"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert services["producer"]["restart"] == "no"


def test_job_runs_a_valid_harvest_submit_on_the_cluster(
    services: dict[str, dict[str, Any]],
) -> None:
    command = services["job"]["command"]
    assert command[:2] == ["harvest", "submit"]
    assert "submit" in _subcommands()
    args = build_parser().parse_args(command[1:])
    assert args.master == "spark://spark-master:7077"
    spec = load_spec(PROJECT_ROOT / args.spec)  # the image's workdir is the repo root
    produced = build_parser().parse_args(services["producer"]["command"][1:])
    assert spec.job.workload == produced.workload
    assert list(spec.join.streams) == [f"s{i + 1}" for i in range(produced.streams)]
    assert spec.job.checkpoint is not None
    volume = services["job"]["volumes"][0].split(":")[1]
    assert spec.job.checkpoint.startswith(volume)
    assert services["spark-worker"]["volumes"] == services["job"]["volumes"]


def test_dockerfile_installs_the_package_and_the_jars() -> None:
    text = (PROJECT_ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -e ." in text
    assert "infra/maven/pom.xml -Pspark" in text
    assert "openjdk-17" in text
    ignore = (PROJECT_ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".cache", ".git"} <= set(ignore)


def test_named_volumes_declared(compose: dict[str, Any]) -> None:
    used = {
        v.split(":")[0]
        for s in compose["services"].values()
        for v in s.get("volumes", [])
        if not v.startswith((".", "/"))
    }
    assert used <= set(compose["volumes"])

