"""minip.experiments."""
