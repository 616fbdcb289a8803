"""The LangGraph store moved to the client package: `streams.client.langgraph_store`
(docs/langgraph-store.md). This name stays for code that imports it from here."""
from streams.client.langgraph_mapping import (
    KeyTooLongError,
    MissingTextError,
    StoreError,
    UnsupportedFilterError,
    UnsupportedNamespaceError,
    list_params,
    query_filters,
    text_of,
    thread_for,
    turn_of,
)
from streams.client.langgraph_store import (
    MemstreamStore,
    NotStoredError,
    OutOfScopeError,
    StoreApiError,
    WriteNotAppliedError,
)

__all__ = ["KeyTooLongError", "MemstreamStore", "MissingTextError", "NotStoredError", "OutOfScopeError",
           "StoreApiError", "StoreError", "UnsupportedFilterError", "UnsupportedNamespaceError",
           "WriteNotAppliedError", "list_params", "query_filters", "text_of", "thread_for", "turn_of"]
