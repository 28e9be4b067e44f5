"""Session, statement, plugin interface and config: the machinery actions and plugins run in."""
