"""Language-model backends and the engine that batches and caches their requests."""
