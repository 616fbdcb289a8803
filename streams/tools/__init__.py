"""What is not the service: the embedded broker and the local stack, clients, replay and the
LoCoMo reader, unsealing, the master-key rotation over Kafka, the LangGraph store. The command
line is `streams.cli`."""
