"""Privacy models as objects that can check a release, independent of the algorithms.

Each model (:class:`PrivacyModel`) reads itself from a manifest, writes its declaration,
generates its guarantee text from its parameters and checks published releases.
"""

from .base import (PrivacyModel, ReleaseVerdict, SeriesVerdict, model_class, model_from_manifest,
                   registered_models)
from .dp_bound import inflated_k, inflated_theta, posterior_bounds, term_share_bound
from .periodic import MSModel, Perturbation, PPMSAlphaModel, PPMSDPModel, PPMSModel
from .single import (DPHistogramModel, IPAModel, KAnonymityModel, LocalDPModel, OneOffRelease,
                     PlainLDPModel)
from .ppms import (GroupCheck, PeriodCheck, QidInfo, SeriesCheck, check_series, qids_from_schema)
from .theta import (FrequencyTheta, ProtectedTheta, TableTheta, ThetaSpec, ThetaTable,
                    UniformTheta, level_wise, parse_protect, parse_theta, protect)

__all__ = ["DPHistogramModel", "IPAModel", "KAnonymityModel", "LocalDPModel", "OneOffRelease",
           "PlainLDPModel", "FrequencyTheta", "GroupCheck", "MSModel", "PPMSAlphaModel", "PPMSDPModel",
           "PPMSModel",
           "PeriodCheck", "Perturbation", "PrivacyModel", "ProtectedTheta", "QidInfo", "ReleaseVerdict",
           "SeriesCheck", "SeriesVerdict", "TableTheta", "ThetaSpec", "ThetaTable", "UniformTheta",
           "check_series", "inflated_k", "inflated_theta", "level_wise", "model_class",
           "model_from_manifest", "parse_protect", "parse_theta", "posterior_bounds", "protect",
           "qids_from_schema", "registered_models", "term_share_bound"]
