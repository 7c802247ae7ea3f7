"""Code graphs from repositories (Python ast, TS/JS tree-sitter) into embedding-training triplets."""
