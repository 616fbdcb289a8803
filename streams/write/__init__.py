"""From a chat turn to the facts worth storing: validation, trigger, extraction and its text rules, writing rules, policy, episodes."""
