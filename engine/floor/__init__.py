"""The serving floor: many requests on one model, as a server schedules them.

workload (settings checked, prompts, arrival times) -> continuous (transformers' continuous
batching over a paged KV cache, watched step by step by watch) and baselines (one at a time, one
static batch) -> serve.run_floor (all three in one run, the Floor file, engine/schema/floor.py).
"""
