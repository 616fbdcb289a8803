"""The worker's Faust app: settings, the app factory (topics, tables), shared services, the worker entry point."""
