"""Where a pass's time goes: each operation of each layer measured on this machine (measure.py) beside
the time the roofline allows it (ops.py: FLOPs and bytes from the config and the pass's shapes; the
machine's bandwidth and FLOP/s as the lab measures them), for a run's prefill and one decode step
(profile.py), and the same table projected onto other GPUs and larger models (project.py)."""
