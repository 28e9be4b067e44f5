"""Read-only questions to the cluster answered by the scheduler's own session:
`muster status`, `muster explain`, `muster whatif`."""
