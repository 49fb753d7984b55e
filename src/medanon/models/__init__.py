"""Privacy models as objects that can check a release, independent of the algorithms."""

from .ppms import (GroupCheck, PeriodCheck, QidInfo, SeriesCheck, check_from_manifests, check_series,
                   qids_from_schema)
from .theta import (FrequencyTheta, TableTheta, ThetaSpec, ThetaTable, UniformTheta, level_wise,
                    parse_theta)

__all__ = ["FrequencyTheta", "GroupCheck", "PeriodCheck", "QidInfo", "SeriesCheck", "TableTheta",
           "ThetaSpec", "ThetaTable", "UniformTheta", "check_from_manifests", "check_series", "level_wise", "parse_theta",
           "qids_from_schema"]
