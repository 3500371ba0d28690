"""pipeline.diffusion."""
