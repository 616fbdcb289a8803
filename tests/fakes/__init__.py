"""Test doubles of services that cannot run here (never imported by the service)."""
