"""language.experiments."""
