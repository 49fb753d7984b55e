"""What a type checker sees of ``medanon`` (``__init__.py`` imports these lazily, on first
use): every public name, with its type, from the module that defines it."""

__version__: str
__all__: list[str]

from .api import (
    Dataset as Dataset,
    EhrPublisher as EhrPublisher,
    EhrRecords as EhrRecords,
    EhrRelease as EhrRelease,
    Publisher as Publisher,
    Release as Release,
    Series as Series,
    SeriesPublisher as SeriesPublisher,
    signals as signals,
    Table as Table,
    TablePublisher as TablePublisher,
    TableRelease as TableRelease,
    UnboundedTermsWarning as UnboundedTermsWarning,
)
from .data.schema import Schema as Schema
from .data.tabular import TableSchema as TableSchema
from .errors import (
    MedanonError as MedanonError,
    PrivacyViolation as PrivacyViolation,
    ValidationError as ValidationError,
)
from .pipeline.ehr import Pseudonyms as Pseudonyms
from .pipeline.policy import SeriesPolicy as SeriesPolicy
from .random import randomness as randomness, Randomness as Randomness
from .store import ReleaseStore as ReleaseStore
from .verify import verify_series as verify_series
