"""The Spark session of the harvest job: connector jars, RocksDB state store, interpreter.

ARCHITECTURE §3: the Kafka and Avro connectors come from `harvest setup`
(``<cache>/jars/spark``) and are passed as ``spark.jars``, never resolved with
``--packages``; executors run the project's own interpreter; the join state lives in the
RocksDB state store provider. The Spark UI is off unless asked for (``harvest submit``
and ``harvest demo`` ask), then on 127.0.0.1 for a local master (:func:`ui_env`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from connectors.launch.jars import FIX_JARS
from pipeline.core.errors import InfraError, SetupRequiredError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)

ROCKSDB_PROVIDER = (
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
)
REQUIRED_JARS = ("spark-sql-kafka-0-10_", "spark-avro_", "kafka-clients-", "commons-pool2-")
#: native memory of the JVM bounded (soak benchmark; README "Reliability", NOTES.md "soak"):
#: every RocksDB state store instance of the JVM shares one block cache and write-buffer
#: budget of this many MB (Spark's default: each instance unbounded). The LRU block cache
#: keeps the blocks of compacted-away SST files until it is full, so the budget is also
#: how far the JVM's native memory creeps up: 256 MB took over 20 minutes of the soak to
#: fill; the soak's state is ~40 MB, so 64 MB holds it and is full within minutes.
ROCKSDB_MEMORY_MB = 64
#: the JIT's code cache, capped (the JVM's default reserves 240 MB and fills it slowly:
#: +4–6 MB per minute still after 10 minutes of the soak); full, it flushes cold code
CODE_CACHE_MB = 128
#: glibc keeps at most this many malloc arenas per process (default 8 per core: native
#: allocations from many threads otherwise spread over arenas whose freed pages stay
#: resident); used where jemalloc is not installed
MALLOC_ARENAS = "2"
JEMALLOC = "libjemalloc.so.2"
#: jemalloc's settings when it is preloaded: return freed pages after 2 s, from a
#: background thread
JEMALLOC_CONF = "background_thread:true,dirty_decay_ms:2000,muzzy_decay_ms:0"
#: rows per Arrow batch handed to Python (Spark's default 10,000): a route key's rows of
#: a drain's micro-batch (~22,500 in ``harvest bench peer``) cross in one frame, not three
ARROW_BATCH_ROWS = 100_000
#: the Spark UI of ``harvest submit`` / ``harvest demo``: loopback only, the first free
#: port from 4040 on (Spark tries ``spark.port.maxRetries`` = 16 ports)
UI_HOST = "127.0.0.1"
UI_PORT = 4040
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass(frozen=True)
class SessionConfig:
    """Frozen settings of one Spark session (master URL, jars, memory, partitions)."""

    master: str = "local[*]"
    app_name: str = "harvest"
    jars: tuple[str, ...] = ()
    shuffle_partitions: int = 4
    driver_memory: str = "1g"
    python: str = sys.executable
    #: the Spark UI and its REST API (``harvest bench peer`` reads task times from it;
    #: ``harvest submit`` and ``harvest demo`` turn it on, tests and benchmarks keep it off)
    ui: bool = False
    #: RocksDB state store memory shared by the JVM's instances, MB
    state_memory_mb: int = ROCKSDB_MEMORY_MB
    #: the JIT code cache cap, MB
    code_cache_mb: int = CODE_CACHE_MB
    #: more driver JVM flags (the soak adds native memory tracking)
    java_options: str = ""
    #: a malloc library preloaded into the JVM and its Python workers ("": glibc's)
    preload: str = ""

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (logs, reports)."""
        return {
            "master": self.master,
            "app_name": self.app_name,
            "jars": list(self.jars),
            "shuffle_partitions": self.shuffle_partitions,
            "driver_memory": self.driver_memory,
            "python": self.python,
            "ui": self.ui,
            "state_memory_mb": self.state_memory_mb,
            "code_cache_mb": self.code_cache_mb,
            "java_options": self.java_options,
            "preload": self.preload,
        }

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any]) -> SessionConfig:
        """Inverse of :meth:`snapshot`."""
        return cls(
            master=str(snap["master"]),
            app_name=str(snap["app_name"]),
            jars=tuple(str(j) for j in snap["jars"]),
            shuffle_partitions=int(snap["shuffle_partitions"]),
            driver_memory=str(snap["driver_memory"]),
            python=str(snap["python"]),
            ui=bool(snap.get("ui", False)),
            state_memory_mb=int(snap.get("state_memory_mb", ROCKSDB_MEMORY_MB)),
            code_cache_mb=int(snap.get("code_cache_mb", CODE_CACHE_MB)),
            java_options=str(snap.get("java_options", "")),
            preload=str(snap.get("preload", "")),
        )

    @property
    def code_cache_option(self) -> str:
        """The JIT code cache cap, as a JVM flag (driver and executors)."""
        return f"-XX:ReservedCodeCacheSize={self.code_cache_mb}m"

    @property
    def jvm_options(self) -> str:
        """The driver JVM's flags: the code cache cap and :attr:`java_options`."""
        return f"{self.code_cache_option} {self.java_options}".strip()


def connector_jars(settings: Settings) -> tuple[str, ...]:
    """The jars in ``<cache>/jars/spark``; raises :class:`SetupRequiredError` (exit 2,
    run `harvest setup`) if one is missing."""
    folder = settings.jars_dir / "spark"
    jars = tuple(sorted(str(p) for p in Path(folder).glob("*.jar")))
    names = [Path(j).name for j in jars]
    missing = [r for r in REQUIRED_JARS if not any(n.startswith(r) for n in names)]
    if missing:
        raise SetupRequiredError(
            f"Spark connector jars missing in {folder}: {', '.join(m + '*.jar' for m in missing)}"
            f"; {FIX_JARS}"
        )
    return jars


def native_allocator(settings: Settings) -> str:
    """jemalloc for the Spark JVM if ``make native`` installed it and
    ``HARVEST_NATIVE_ALLOCATOR`` is ``auto``; "" (glibc's malloc) otherwise.

    Why: under glibc the driver JVM's memory outside the Java heap (RocksDB, compression
    and other JNI code) kept growing through the soak (docs/NOTES.md "soak")."""
    if settings.native_allocator != "auto":
        return ""
    lib = settings.cache_dir / "lib" / JEMALLOC
    if lib.is_file():
        return str(lib)
    log.info("jemalloc not installed (make native): the JVM uses glibc malloc", path=str(lib))
    return ""


def is_local_master(master: str) -> bool:
    """A master on this machine: ``local``, ``local[N]``, or a standalone master on a
    loopback address (the executors reach the driver there too).

    >>> [is_local_master(m) for m in ("local[2]", "spark://127.0.0.1:7077", "yarn")]
    [True, True, False]
    """
    if master == "local" or master.startswith("local["):
        return True
    host = master.split("://", 1)[-1].rsplit(":", 1)[0]
    return host in LOOPBACK_HOSTS


def ui_env(config: SessionConfig, environ: dict[str, str]) -> dict[str, str]:
    """With the UI on and a local master: ``SPARK_LOCAL_IP=127.0.0.1``, so the UI (and
    the driver) bind to the loopback address only, never to every interface (Spark binds
    its UI to ``SPARK_LOCAL_IP``, else 0.0.0.0). A value the user set is kept; a remote
    master's executors must reach the driver, so there nothing is set."""
    if not config.ui or "SPARK_LOCAL_IP" in environ or not is_local_master(config.master):
        return {}
    return {"SPARK_LOCAL_IP": UI_HOST}


def ui_url(spark: SparkSession, config: SessionConfig) -> str | None:
    """The Spark UI's URL (None with the UI off): ``http://127.0.0.1:<port>`` when
    :func:`ui_env` bound it there (Spark's own URL names the driver's host name, which
    need not resolve to the loopback address), else Spark's."""
    url = spark.sparkContext.uiWebUrl
    if not url or not config.ui:
        return None
    if is_local_master(config.master) and os.environ.get("SPARK_LOCAL_IP", UI_HOST) == UI_HOST:
        return f"http://{UI_HOST}:{url.rsplit(':', 1)[-1]}"
    return str(url)


def _launch_env(config: SessionConfig) -> dict[str, str]:
    """Environment for the JVM that ``getOrCreate`` starts (inherited by the Python
    workers it forks)."""
    env = {"MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", MALLOC_ARENAS)}
    env.update(ui_env(config, dict(os.environ)))
    if config.preload:
        if not Path(config.preload).is_file():
            raise InfraError(f"preload library not found: {config.preload!r}")
        env["LD_PRELOAD"] = config.preload
        env["MALLOC_CONF"] = os.environ.get("MALLOC_CONF", JEMALLOC_CONF)
    return env


def build_session(config: SessionConfig) -> SparkSession:
    """Start (or reuse) the Spark session described by ``config``."""
    os.environ.setdefault("PYSPARK_PYTHON", config.python)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", config.python)
    builder = (
        SparkSession.builder.master(config.master)
        .appName(config.app_name)
        .config("spark.jars", ",".join(config.jars))
        .config("spark.pyspark.python", config.python)
        .config("spark.pyspark.driver.python", config.python)
        .config("spark.executorEnv.PYSPARK_PYTHON", config.python)
        .config("spark.driver.memory", config.driver_memory)
        .config("spark.driver.extraJavaOptions", config.jvm_options)
        .config("spark.executor.extraJavaOptions", config.code_cache_option)
        .config("spark.sql.shuffle.partitions", str(config.shuffle_partitions))
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage", "true")
        .config("spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB",
                str(config.state_memory_mb))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "true" if config.ui else "false")
        .config("spark.ui.port", str(UI_PORT))
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
    )
    # set only while the JVM starts: the driver's own later children (producers, jcmd)
    # keep the plain environment
    launch = _launch_env(config)
    saved = {k: os.environ.get(k) for k in launch}
    os.environ.update(launch)
    try:
        spark = builder.getOrCreate()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    spark.sparkContext.setLogLevel("WARN")
    # the session may be reused (tests): make the per-job settings current
    spark.conf.set("spark.sql.shuffle.partitions", str(config.shuffle_partitions))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
    log.info("spark session", master=config.master, jars=len(config.jars),
             shuffle_partitions=config.shuffle_partitions,
             malloc="jemalloc" if config.preload else "glibc",
             state_memory_mb=config.state_memory_mb, code_cache_mb=config.code_cache_mb)
    return spark
