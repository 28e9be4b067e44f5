"""Effects: decisions become bindings, evictions, statuses and events on the API server."""
