"""pipeline.app."""
