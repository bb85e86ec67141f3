"""The acceleration lab's file (`token-by-token/lab@1`, what `engine.lab.run_lab` returns): its
experiments, by name and in the order the lab runs them and the page shows them. The one list:
engine/lab registers a function for each, the page a section, viz a summary (a test holds them equal)."""

SCHEMA = "token-by-token/lab@1"
EXPERIMENTS = ("kv_cache", "attention", "weights", "roofline", "batching", "verify", "speculative")
