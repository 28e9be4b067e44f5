"""The only package that talks HTTP to the API server."""
