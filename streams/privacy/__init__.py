"""What keeps a user's content private, and what makes a purge final: per-user data keys
(crypto-shredding), sealed tables and sealed topic payloads. See docs/privacy.md and docs/architecture.md#privacy."""
