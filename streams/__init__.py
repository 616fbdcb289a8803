"""memstream: streaming long-term memory for chat agents (Faust app, domain logic, API)."""
