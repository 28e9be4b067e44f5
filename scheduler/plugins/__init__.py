"""Plugins: the scheduling policies, one module each."""
