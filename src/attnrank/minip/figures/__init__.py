"""minip.figures."""
