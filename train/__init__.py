"""lastedge.train: LAST and its baselines as scikit-learn estimators (torch, CPU or GPU)."""
