"""pipeline.core."""
