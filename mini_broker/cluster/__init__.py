"""mini_broker as a cluster: a metadata controller, brokers that register with it, replication between them.

See docs/ARCHITECTURE.md ("Cluster and replication") and :mod:`mini_broker.cluster.mini_cluster`.
"""
