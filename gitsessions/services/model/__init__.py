"""Model: the model client, the endpoint probe, pricing."""
