"""The skill graph on disk: its name and files, links between its pages, its llms.txt and sources.json,
the previous build it replaces, and the atomic swap that commits a build.

:mod:`.names` (untrusted names made safe paths), :mod:`.folder` (a staging build
and its commit), :mod:`.links` (links between pages pointed at their files),
:mod:`.llms` (``llms.txt``, ``llms-full.txt``), :mod:`.sources` (``sources.json``,
``failed.json``, the shrink guard), :mod:`.previous` (the live graph read once).
The pipeline that decides what is written is :mod:`skillgraph.pipelines.graph`.
"""
