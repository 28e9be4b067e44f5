"""The machinery actions and plugins run in: the session, its statements, the cycle's typed
state and its builder, the plugin and action contracts, config and arguments."""
