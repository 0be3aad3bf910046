"""entropic.experiments."""
