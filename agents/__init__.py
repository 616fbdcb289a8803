"""One module per stream stage: ingest (validate + trigger + extract), dedup, progress."""
