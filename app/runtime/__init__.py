"""What runs the models for every chapter, and knows nothing of any chapter: the loaded models
(registry, loading, trained states), the text check, the model thread and its jobs, the result
cache, the CPU-share watch, and the errors requests can meet. Below `app.services`, above `models`
(the import contracts in pyproject.toml)."""
