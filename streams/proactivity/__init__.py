"""Proactivity (seed 000 §11): which new or changed memories a downstream agent may bring up
unprompted, with why and in what tone, at what rate (`memory.proactivity`, SPEC §2).

`scoring` turns a memory into its scores and tone; `policy` applies the thresholds and the
user's event-time rate limit (with backoff on ignored candidates) and builds the records.
"""
