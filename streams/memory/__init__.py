"""The memory document and the state of a user's memories: ids, dedup/supersede, audit, revisions, commands, purge, access, the vector index."""
