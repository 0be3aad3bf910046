"""entropic.tasks."""
