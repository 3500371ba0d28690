"""Fixtures of the integration tests: one local Spark session per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.core.settings import load_settings
from pipeline.spark.session import SessionConfig, build_session, connector_jars


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """A local session with the connector jars, in the e2e tests' configuration
    (``getOrCreate`` shares one JVM when both run in one pytest process); a module that
    changes ``spark.sql.shuffle.partitions`` gets it put back."""
    session = build_session(SessionConfig(
        master="local[2]", app_name="harvest-e2e", jars=connector_jars(load_settings()),
        shuffle_partitions=2,
    ))
    yield session
    session.conf.set("spark.sql.shuffle.partitions", "2")
