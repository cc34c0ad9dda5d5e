"""Summaries written by a model: the prompt, what the model reads, calls with retries and a breaker, batches."""
