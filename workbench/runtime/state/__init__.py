"""What persists across runs: weights on host and device, the weights replicas share, the snapshot that undoes a run, the allocator's tuning."""
