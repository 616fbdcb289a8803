"""The read path: query planning, filters, ranking, token budget, recall intent, categories, the delta header."""
