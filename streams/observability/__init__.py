"""Prometheus metrics and the consumer-lag gauge."""
