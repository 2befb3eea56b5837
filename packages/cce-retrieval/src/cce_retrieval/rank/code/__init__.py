"""Code-aware retrieval: the opt-in `code` and `code-hybrid` backends (docs/ranking.md).

The package's modules: `text` (identifier terms, path terms, query shapes, definitions,
path classes), `index` (the code index derived from a store and cached), `ranker` (the
candidate pool and its re-ranking steps). Their parameters, help and factories, the
registry's entries, are `cce_retrieval.rank.backends.code`, so this package never
imports the registry that lists it.
"""
