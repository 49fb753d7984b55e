"""Privacy models as objects that can check a release, independent of the algorithms."""

from .theta import (FrequencyTheta, TableTheta, ThetaSpec, ThetaTable, UniformTheta, level_wise,
                    parse_theta)

__all__ = ["FrequencyTheta", "TableTheta", "ThetaSpec", "ThetaTable", "UniformTheta", "level_wise",
           "parse_theta"]
