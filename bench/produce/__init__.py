"""`harvest bench produce`: records/s of :func:`connectors.io.producer.publish` into Kafka.

Sensor records (the ``sensor_reading`` schema) are published to a fresh topic of the
configured broker (started with ``harvest kafka up`` if none answers). Measured in the
same run, on the same records:

* ``publish`` - the full path: Avro single-object encoding + idempotent produce (target
  >= 50,000 records/s);
* ``raw_produce`` - the ceiling: produce the same records already encoded;
* ``encode_only`` - the serde's vectorized batch encoding alone, no Kafka;
* ``fastavro_encode`` - per-record encoding with fastavro (the serde's general path);
* ``avro_lib_encode`` - the baseline encoder: the official ``avro`` package (on a slice).

Each case runs ``repeats`` times; the best and median rates are reported (the machine is
shared, so the best run is the least disturbed one), together with the process CPU time
per record (all threads, librdkafka's included), which depends much less on other load.
Writes ``produce.json`` + ``produce.png``.

Not a figure of a paper: the producer's target (50,000 records/s) is the project's own.
Modules: :mod:`~bench.produce.workload` (the records), :mod:`~bench.produce.cases` (the
measured cases), :mod:`~bench.produce.report` (JSON, table, PNG), :mod:`~bench.produce.main`
(the run).
"""

from bench.produce.main import run
from bench.produce.workload import SCHEMA, sensor_records

__all__ = ["SCHEMA", "run", "sensor_records"]
