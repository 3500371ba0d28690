"""pipeline.spec.model."""
