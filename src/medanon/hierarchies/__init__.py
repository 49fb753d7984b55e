"""Generalization hierarchies: taxonomy trees, numeric intervals, built-in trees, ARX files.

Categorical QIDs generalize up a :class:`Taxonomy` (lowest common ancestor of a group's labels);
numeric QIDs generalize to an :class:`Interval` hull. Built-in trees: :func:`mesh_age_tree` and
:func:`sex_tree` (by name in :data:`BUILTIN_HIERARCHIES`); any other tree comes from an ARX CSV
file via :func:`read_arx`.
"""

from .arx import read_arx, write_arx
from .builtin import BUILTIN_HIERARCHIES, MAX_AGE_YEARS, age_to_mesh, mesh_age_tree, sex_tree
from .intervals import MAX_INTERVAL_BINS, Interval, format_number, interval_hierarchy
from .taxonomy import Taxonomy

__all__ = [
    "BUILTIN_HIERARCHIES",
    "MAX_AGE_YEARS",
    "MAX_INTERVAL_BINS",
    "Interval",
    "Taxonomy",
    "age_to_mesh",
    "format_number",
    "interval_hierarchy",
    "mesh_age_tree",
    "read_arx",
    "sex_tree",
    "write_arx",
]
