"""The README's five steps on memstream's client: add a conversation (and get what it taught),
search, list, update, delete.

    python examples/memory_basics.py dana    # against `memstream run` (its broker, API and key)
"""
import sys

from streams.client import MemstreamClient

user = sys.argv[1] if len(sys.argv) > 1 else "dana"
with MemstreamClient.from_settings() as memory:
    added = memory.add([{"role": "user", "content": "I'm training for the Boston marathon in April."},
                        {"role": "assistant", "content": "Great goal! How is the training going?"}],
                       user_id=user, thread_id="t1", speaker="Dana")      # 1. returns once applied
    best = memory.search(user, "What is Dana training for?")[0]            # 2. best score first
    print(best.score, best.summary, [m.summary for m in memory.list(user).items])  # 3.
    memory.update(user, best.id, "Dana is training for the Boston marathon in May.")  # 4.
    memory.delete(user, best.id)                                           # 5. restorable
    print([m.summary for m in added.memories])
