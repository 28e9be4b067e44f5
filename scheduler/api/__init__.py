"""Plain data: quantities, resources and the compact records scheduling needs."""
