"""Destinations of memory events (S3 Vectors, OpenSearch) over one sink contract."""
