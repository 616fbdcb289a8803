#!/bin/bash
# The chat backend's Kafka user and what it may do (run once by docker-compose.yml's kafka-init
# service after the broker is healthy; running it again changes nothing).
#
# The user logs in with SCRAM-SHA-512 on the published listener (127.0.0.1:9094). Its password
# is the compose secret kafka_chat_password; Kafka keeps only a salted hash of it, in the
# cluster metadata. The ACLs let it produce turns and commands, read proactivity candidates,
# and use consumer groups whose id starts with "chat-" (never the workers' group).
set -euo pipefail

KAFKA_BIN=/opt/kafka/bin
# The compose-internal listener: its connections are User:ANONYMOUS, the broker's super user.
BOOTSTRAP=kafka:9092
USER_NAME=${KAFKA_CHAT_USER:-chat}
PASSWORD=$(cat /run/secrets/kafka_chat_password)

if [ -z "$PASSWORD" ]; then
  echo "kafka-init: the secret kafka_chat_password is empty (set KAFKA_CHAT_PASSWORD)" >&2
  exit 1
fi
case "$PASSWORD" in
  *[,\]=]*)
    echo "kafka-init: KAFKA_CHAT_PASSWORD may not contain , ] or = (SCRAM config syntax)" >&2
    exit 1 ;;
esac

"$KAFKA_BIN/kafka-configs.sh" --bootstrap-server "$BOOTSTRAP" --alter \
  --entity-type users --entity-name "$USER_NAME" \
  --add-config "SCRAM-SHA-512=[iterations=8192,password=$PASSWORD]" > /dev/null
echo "kafka-init: SCRAM-SHA-512 credentials of User:$USER_NAME set"

allow() {
  "$KAFKA_BIN/kafka-acls.sh" --bootstrap-server "$BOOTSTRAP" --add \
    --allow-principal "User:$USER_NAME" "$@" > /dev/null
}
for topic in chat.turns memory.commands; do
  allow --operation Write --operation Describe --topic "$topic"
done
allow --operation Read --operation Describe --topic memory.proactivity
allow --operation Read --resource-pattern-type prefixed --group chat-
echo "kafka-init: ACLs of User:$USER_NAME set"
