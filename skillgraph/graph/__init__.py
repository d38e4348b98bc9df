"""The skill graph on disk: its name, its folder and files, and how a build is swapped in.

Owns where a graph's files go (``SKILLGRAPH_GRAPHS_DIR/<name>``) and the rules that keep them there.
"""
