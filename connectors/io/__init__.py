"""connectors.io."""
