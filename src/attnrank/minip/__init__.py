"""minip."""
