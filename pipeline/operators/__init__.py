"""Engine-agnostic stream operators: plain Python + NumPy, no Spark or Kafka imports."""
