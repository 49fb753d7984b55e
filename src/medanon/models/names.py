"""The names of the privacy models, as manifests declare them (``method.privacy_model``).

One definition shared by the algorithms that declare a model and the readers that act on the
declaration (the verify gate, the attacks), so the two cannot drift apart.
"""

MS_MODEL = "MS(k, theta*)-bounding"
PPMS_MODEL = "PPMS(k, theta*)-bounding"
HA_MODEL = "PPMS(k, theta, alpha)-bounding"
PPMS_DP_MODEL = "PPMS-DP(k, theta*, epsilon)"

__all__ = ["HA_MODEL", "MS_MODEL", "PPMS_DP_MODEL", "PPMS_MODEL"]
