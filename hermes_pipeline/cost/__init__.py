"""What compaction costs: the live agent's replayed bill, dry runs, calibration on real bills."""
