"""The published release format, below everything that makes or checks releases.

Cells (:mod:`.cells`), rows and manifests on disk (:mod:`.format`), a series of releases
(:mod:`.series`), the link of their CaseIDs (:mod:`.links`) and the FAERS layout
(:mod:`.faers_layout`). Nothing here anonymizes, verifies or stores: the models, the attacks and
the metrics read releases through this package, and :mod:`medanon.pipeline` writes them.
"""
