"""The LLM as the service asks it: `streams.guarded.llm.GuardedLLM`, each question under a time
budget and always answered, by the model (`streams.providers.llm`) or by the rules of the write
path (`streams.write`) and of the dedup decision (`streams.memory.dedup`).

Above the providers, the write rules and the memory, which is why it is not in
`streams.providers`: a provider is one model behind one small interface, and imports none of them.
"""
