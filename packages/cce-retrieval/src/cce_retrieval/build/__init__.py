"""A directory to an in-memory index: the pipeline, its helper processes and the build cache."""
