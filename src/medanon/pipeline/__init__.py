"""The release pipelines, above the methods, the verify gate and the store.

:mod:`.methods` is the one registry of methods by name (periodic, table and EHR families);
:mod:`.publish` turns one period's records into a gated release (rows, manifest, ledger);
:mod:`.tabular` and :mod:`.ehr` do the same for one-off table (004) and diagnosis-sequence (003)
releases; :mod:`.export` writes a published series in the release format, Parquet or the FAERS
layout. :mod:`medanon.api` and the CLI are thin layers over these.
"""
