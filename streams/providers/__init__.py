"""Providers behind one small interface each: LLMs (`streams.providers.llm`) and embedders
(`streams.providers.embedders`)."""
