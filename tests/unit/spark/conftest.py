"""A local Spark session with the connector jars (shared with tests/e2e via getOrCreate)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.config import load_settings
from pipeline.spark.session import SessionConfig, build_session, connector_jars


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The same session configuration as the e2e tests (local[2], connector jars)."""
    session = build_session(SessionConfig(
        master="local[2]", app_name="harvest-e2e", jars=connector_jars(load_settings()),
        shuffle_partitions=2,
    ))
    yield session
    session.stop()
