"""Effects: decisions become bindings, statuses and events on the API server."""
