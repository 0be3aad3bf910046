"""entropic.figures."""
