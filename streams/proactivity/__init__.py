"""Proactivity candidates on `memory.proactivity` (seed 000 §11): `streams.proactivity.policy`."""
from streams.proactivity.policy import ProactivityPolicy

__all__ = ["ProactivityPolicy"]
