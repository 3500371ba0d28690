"""The Spark session a benchmark runs its queries in: the job's connector jars, ``local[2]``
unless told otherwise, stopped when the benchmark is done."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pipeline.core.settings import Settings

if TYPE_CHECKING:
    from pipeline.spark.session import SessionConfig


def session_config(settings: Settings, app_name: str, *, master: str = "local[2]",
                   shuffle_partitions: int = 2, **options: Any) -> SessionConfig:
    """A :class:`~pipeline.spark.session.SessionConfig` with the connector jars of
    ``settings``; ``options`` are its other fields (memory, JVM flags, UI, ...)."""
    from pipeline.spark.session import SessionConfig, connector_jars

    return SessionConfig(master=master, app_name=app_name, jars=connector_jars(settings),
                         shuffle_partitions=shuffle_partitions, **options)


@contextmanager
def spark_session(config: SessionConfig) -> Iterator[Any]:
    """The session of ``config`` (:func:`session_config`), stopped on exit."""
    from pipeline.spark.session import build_session

    spark = build_session(config)
    try:
        yield spark
    finally:
        spark.stop()
