"""Secret protection before indexing: file names never read, and content redaction."""
