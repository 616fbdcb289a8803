"""What is not the service: the CLI, clients, the embedded broker, replay."""
