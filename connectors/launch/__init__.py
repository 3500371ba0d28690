"""connectors.launch."""
