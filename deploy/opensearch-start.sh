#!/bin/bash
# OpenSearch with its security plugin on (docker-compose.yml's opensearch entrypoint).
#
# 1. On the container's first start, the plugin's setup tool writes the node's TLS
#    configuration for node-to-node transport (required by the plugin; its demo certificates:
#    this single node's transport port is never published) and lets the plugin build its
#    security index from config/opensearch-security/ on first boot.
# 2. The setup's user list (which also holds demo users with well-known passwords) is replaced
#    by one user, `memstream` (all_access through the `admin` backend role), whose password
#    is the compose secret opensearch_password; only its bcrypt hash is written.
# 3. OpenSearch starts through the image's own entrypoint.
#
# The security index is built from these files once, when the data volume is new; to change
# the password afterwards use the security API or securityadmin.sh (docs/operations.md#opensearch).
set -euo pipefail

HOME_DIR=/usr/share/opensearch
TOOLS=$HOME_DIR/plugins/opensearch-security/tools
SECURITY_CONFIG=$HOME_DIR/config/opensearch-security

OPENSEARCH_INITIAL_ADMIN_PASSWORD=$(cat /run/secrets/opensearch_password)
export OPENSEARCH_INITIAL_ADMIN_PASSWORD
if [ -z "$OPENSEARCH_INITIAL_ADMIN_PASSWORD" ]; then
  echo "opensearch-start: the secret opensearch_password is empty (set OPENSEARCH_PASSWORD)" >&2
  exit 1
fi

if ! grep -q '^plugins.security.ssl.transport' "$HOME_DIR/config/opensearch.yml"; then
  # -y: no questions; -i: build the security index from the files; -s: skip if configured.
  bash "$TOOLS/install_demo_configuration.sh" -y -i -s
fi

HASH=$(bash "$TOOLS/hash.sh" -env OPENSEARCH_INITIAL_ADMIN_PASSWORD | tail -n 1)
cat > "$SECURITY_CONFIG/internal_users.yml" <<EOF
---
_meta:
  type: "internalusers"
  config_version: 2

memstream:
  hash: "$HASH"
  reserved: true
  backend_roles:
  - "admin"
  description: "memstream's workers (the OpenSearch sink) and its operators"
EOF
unset OPENSEARCH_INITIAL_ADMIN_PASSWORD HASH

exec "$HOME_DIR/opensearch-docker-entrypoint.sh" opensearch
