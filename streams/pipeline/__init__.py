"""The write path's stages as the worker runs them, transport-free: ingest, dedup, commands; their outputs; an in-process runner."""
