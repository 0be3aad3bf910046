"""language."""
