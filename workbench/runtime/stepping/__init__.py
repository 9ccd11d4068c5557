"""Stepping a run op by op: the stepper, its interpreter and its replica threads."""
