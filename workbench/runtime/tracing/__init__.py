"""What a run leaves to look at: traces in simulated cycles, the timeline that computes them, progress bars."""
