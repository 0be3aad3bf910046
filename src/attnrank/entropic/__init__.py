"""entropic."""
