"""The admin page: static HTML/JS served by the worker at /admin (streams/web_registry.py)."""
