"""The worker's HTTP API: query, registry, auth, server-sent events, OpenAPI, the admin page."""
