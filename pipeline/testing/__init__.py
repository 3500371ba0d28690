"""Test kit: what the test suites share, importable as plain Python + NumPy.

Tests import these modules and never each other (pytest fixtures stay in ``conftest.py``).
Nothing here imports pyspark, confluent_kafka, fastavro or ``bench``; pandas, which comes
with ``pyspark[sql]``, is imported only when a :mod:`~pipeline.testing.frames` helper runs.

* :mod:`~pipeline.testing.streams` — small generated streams and join specs over them;
* :mod:`~pipeline.testing.oracle` — the oracle's answer as result ids;
* :mod:`~pipeline.testing.compare` — result-set assertions that name what differs;
* :mod:`~pipeline.testing.costmodel` — random GrubJoin cost models and a loop oracle;
* :mod:`~pipeline.testing.recall` — γ(L, K) written out loop by loop;
* :mod:`~pipeline.testing.frames` — the Spark processor's micro-batch frames, without Spark;
* :mod:`~pipeline.testing.state` — a transactional in-memory stand-in for Spark's state
  handle;
* :mod:`~pipeline.testing.cli` — the CLI contract check (bad values exit 2);
* :mod:`~pipeline.testing.wall` — a counter clock and GrubJoin on the wall queue behind it.
"""
