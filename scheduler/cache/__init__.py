"""The world as watched: reflectors per kind feeding one incrementally kept snapshot."""
