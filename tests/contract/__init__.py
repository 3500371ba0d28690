"""Contracts every implementation of a plug-in protocol keeps (pipeline/operators/contract.py)."""
