"""Actions: what happens in each scheduling cycle, in order."""
