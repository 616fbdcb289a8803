"""The admin page: static HTML/JS served by the worker at /admin (streams/api/web.py), over the registry API (streams/api/registry.py)."""
