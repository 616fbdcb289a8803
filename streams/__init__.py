"""memstream: streaming long-term memory for chat agents — the library every stage uses.

Sub-packages, in the order a chat turn meets them (README "Following one turn"):
`app` (settings, the app factory, the worker entry point), `pipeline` (the stages, run by
`agents/`), `write` (turn → facts), `memory` (the memory document and its state), `read` (queries),
`api` (HTTP), `providers` (LLMs, embedders), `observability`; and what is not the service: `tools`
(CLI, clients, embedded broker) and `eval` (benchmarks, evaluation).
"""
