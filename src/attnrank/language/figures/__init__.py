"""language.figures."""
