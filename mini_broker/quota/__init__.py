"""Client quotas (Kafka: ``kafka.server.ClientQuotaManager`` and friends): what is set per user / client id /
ip (:mod:`~mini_broker.quota.client_quotas`), the windowed rates and throttle times
(:mod:`~mini_broker.quota.quota_manager`), and ending throttles on time
(:mod:`~mini_broker.quota.throttled_channel_reaper`)."""
