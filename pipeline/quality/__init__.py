"""pipeline.quality."""
