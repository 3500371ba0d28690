"""harvest: adaptive m-way sliding-window stream join with window harvesting."""

__version__ = "0.1.0"
