"""entropic.models."""
