"""Date columns of a schema: FAERS dates (partial ones too), their granularity, the TOML."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd
import pytest

from medanon.data.dates import as_faers_date, faers_date, publish_dates, truncate_date, valid_dates
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.errors import SchemaError
from medanon.published.format import to_published_rows


def test_faers_dates_full_and_partial() -> None:
    valid = {"20221123": "20221123", " 202211 ": "202211", "2022": "2022", "20240229": "20240229"}
    for text, want in valid.items():
        assert faers_date(text) == want
    for text in ("", "2022-11-23", "20221323", "20230229", "202200", "221123", "18991231",
                 "2022112", "abcd", "20221123 1"):
        assert faers_date(text) is None, text


def test_truncation_to_each_granularity() -> None:
    assert truncate_date("20221123", "day") == "20221123"
    assert truncate_date("20221123", "month") == "202211"
    assert truncate_date("20221123", "year") == "2022"
    # a partial date coarser than the granularity stays as it is: nothing is invented
    assert truncate_date("2022", "day") == "2022" and truncate_date("202211", "day") == "202211"
    assert truncate_date("2022", "month") == "2022"
    assert truncate_date(None, "year") == ""
    cells = np.array(["20221123", None, "202211", "2022", "20221123", np.nan], dtype=object)
    assert publish_dates(cells, "month") == ["202211", "", "202211", "2022", "202211", ""]


def test_record_date_cells() -> None:
    assert as_faers_date(pd.Timestamp("2022-11-23 10:00")) == "20221123"
    assert as_faers_date(dt.date(2022, 1, 5)) == "20220105"
    assert as_faers_date(20221123) == "20221123" and as_faers_date(202211.0) == "202211"
    assert as_faers_date(None) is None and as_faers_date(np.nan) is None
    assert as_faers_date("") is None
    for bad in ("2022-11-23", "20221332", True):
        with pytest.raises(ValueError):
            as_faers_date(bad)
    out, invalid = valid_dates(np.array(["20221123", "", "2022-1", " 2021 ", "20221123"],
                                        dtype=object))
    assert out.tolist() == ["20221123", None, None, "2021", "20221123"] and invalid == 1


def _schema(dates: dict) -> Schema:
    return Schema.from_mapping({**Schema.papers().model_dump(by_alias=True), "dates": dates})


def test_dates_in_the_schema_and_its_toml(tmp_path) -> None:
    schema = _schema({"fda_dt": "month", "init_fda_dt": "day"})
    assert schema.published[-2:] == ("fda_dt", "init_fda_dt")  # declaration order, last
    path = tmp_path / "s.toml"
    path.write_text(schema.to_toml(), encoding="utf-8")
    assert Schema.from_toml(path) == schema
    # a [schema.dates] table reads the same
    table = schema.to_toml().replace('dates = {"fda_dt" = "month", "init_fda_dt" = "day"}\n', "")
    path.write_text(table + '\n[schema.dates]\nfda_dt = "month"\ninit_fda_dt = "day"\n',
                    encoding="utf-8")
    assert Schema.from_toml(path) == schema
    # a schema without dates writes what it wrote before dates existed
    assert "dates" not in Schema.papers().to_toml()
    with pytest.raises(SchemaError, match=re.escape("dates.fda_dt: Input should be 'day', "
                                                    "'month' or 'year'")):
        _schema({"fda_dt": "week"})
    with pytest.raises(SchemaError, match="more than one role: drugs"):
        _schema({"drugs": "year"})
    with pytest.raises(SchemaError, match="more than one role: age"):
        _schema({"age": "year"})


def _records(**dates) -> pd.DataFrame:
    n = 3
    frame = pd.DataFrame({"case_id": ["1", "1", "2"], "period": ["2020Q1"] * n,
                          "report_id": ["a", "b", "c"], "version": [1, 2, 1],
                          "age": ["Aged"] * n, "sex": ["F"] * n, "weight": [60.0] * n,
                          "reactions": [("Rash",)] * n, "indications": [("Pain",)] * n,
                          "drugs": [("A",)] * n, "age_years": [70.0] * n})
    for name, values in dates.items():
        frame[name] = values
    return frame


def test_super_records_take_the_latest_reports_date_and_releases_truncate_it() -> None:
    schema = _schema({"fda_dt": "month", "init_fda_dt": "year"})
    frame = _records(fda_dt=["20200105", pd.Timestamp("2020-02-09"), None],
                     init_fda_dt=["20191231", "2019", "2020"])
    supers = combine_super_records(frame, schema, schema.load_hierarchies())
    assert supers.frame["fda_dt"].iloc[0] == "20200209" and pd.isna(supers.frame["fda_dt"].iloc[1])
    assert supers.frame["init_fda_dt"].tolist() == ["2019", "2020"]
    table = supers.frame.assign(group=supers.frame["case_id"])
    rows = to_published_rows(table, schema)
    assert rows["fda_dt"].tolist() == ["202002", ""]
    assert rows["init_fda_dt"].tolist() == ["2019", "2020"]
    assert list(rows.columns)[-2:] == ["fda_dt", "init_fda_dt"]
    with pytest.raises(SchemaError, match="Date column 'fda_dt'.*'2020-01-05'"):
        combine_super_records(_records(fda_dt=["2020-01-05"] * 3, init_fda_dt=[None] * 3),
                              schema, schema.load_hierarchies())
