"""One file to chunks: language packs, AST chunking, imports and the conformance table."""
