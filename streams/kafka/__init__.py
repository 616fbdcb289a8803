"""How memstream's Kafka clients connect and read offsets, whoever they are: the worker, the
tools, the bench and the client library (`security`: TLS and SASL from the settings;
`highwaters`: the true end of a partition on a broker whose answer is low)."""
