"""Deterministic workload generators (sensors, news, equi) and disorder models."""
