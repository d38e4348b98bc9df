"""Item pipelines, in order: the quality gates, the page budget, content dedup, the dual write (disk items,
then the Redis queue) and the graph writer (what is written, and whether the build is committed).

Their paths are the ones users name in ``ITEM_PIPELINES``: they stay stable.
"""
