"""Review: the RPA review model, thresholds, uncertainty and calibration."""
