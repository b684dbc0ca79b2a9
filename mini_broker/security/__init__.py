"""Broker security: the ACL authorizer and the per-request authorization helper the API handlers use."""
