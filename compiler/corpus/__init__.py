"""Runs over a corpus of graphs: the impact of a rule edit on every graph (`corpus diff`), and batch compiles
and optimizations, cached per graph and rule set, on local worker processes or a Dask cluster.

`inputs` names the graphs and rule sets (plain data that pickles), `jobs` is the work of one graph, `execute`
the cache and the workers, `report` the reports as data, `render` the reports for reading.
"""
