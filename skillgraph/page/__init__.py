"""One page's way from response to document: the callbacks every spider shares, and the pool of worker
processes that parses, extracts, assesses and reads the links of each page once.

:mod:`.callbacks` (:class:`~.callbacks.PageCallbacks`) takes a response to the tier
ladder (:mod:`skillgraph.tiers`) and its links to the build; :mod:`.pool`
(:class:`~.pool.PagePool`, :func:`~.pool.evaluate`) does the CPU-heavy part in
workers; :mod:`.outcomes` names the refusals that are not failures; :mod:`.memtrim`
gives a big page's memory back.
"""
