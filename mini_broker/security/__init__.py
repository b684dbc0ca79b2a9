"""Broker security: listener security (Kafka: ``common.security`` on the broker side: TLS listeners, SASL
authentication (PLAIN, SCRAM-SHA-256/512) with re-authentication (KIP-368), SCRAM credentials and principal
mapping), and the ACL authorizer with the per-request authorization helper the API handlers use."""
