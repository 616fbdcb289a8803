"""What happens to memories after they are written, in event time: forgetting (TTL soft-delete,
purge, decay archiving, the memory cap), and the passes other modules add (promotion,
consolidation, insights).

`runner.LifecycleRunner` decides when a user's passes are due, from the partition's event-time
watermark (`watermark.py`), and runs them inside the dedup stage's processing of a record, so
their table writes land on that record's partition. A pass is any `passes.LifecyclePass`.
"""
