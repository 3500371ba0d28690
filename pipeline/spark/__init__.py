"""The Spark Structured Streaming job wrapping the operator library (the only pyspark importer)."""
