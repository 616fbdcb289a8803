"""The `memstream` command line (entry point: `streams.cli.main:main`)."""
