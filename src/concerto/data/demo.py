"""The demo source: 300 business customers over 24 months, generated the same way every time.

One row per customer and month: company name, a free-text description, industry, region,
segment, month, sales, units, engagement score and support tickets. Patterns are planted
for every analytics agent to find; `PLANTED` says which, and the tests check that the
agents report them:

- sales are right-skewed (a few large accounts) and grow about 15 % over the two years,
  with a fourth-quarter peak each year;
- the West holds the largest share of Enterprise customers; the South is underserved
  (a quarter of the customers, about an eighth of the revenue);
- five customers have one month with sales three to four times their usual (anomalies);
- about 40 customers are highly engaged but buy below their segment's average (upsell);
- about 25 customers lose engagement over the last three months while their tickets rise
  (at risk), most of them in the East;
- the descriptions say what each company does (semiconductors, retail, ...), and some
  mention supply-chain trouble: what semantic text matching and search look for.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from concerto.data.context import DataContext
    from concerto.data.store import Store

SEED = 20251203
PREPARE_SECONDS = 3.0  # generating, loading and embedding the demo table on an idle 2-core machine
CUSTOMERS = 300
MONTHS = 24
START = date(2023, 1, 1)

INDUSTRIES = {
    "Semiconductors": [
        "designs and manufactures microchips and processors",
        "produces silicon wafers and chip packaging",
    ],
    "Retail": ["runs a chain of grocery and convenience stores", "sells clothing and home goods online and in malls"],
    "Healthcare": ["operates outpatient clinics and diagnostic labs", "provides home nursing and elder care services"],
    "Software": ["builds cloud accounting software for small firms", "develops cybersecurity tools for enterprises"],
    "Logistics": ["runs freight trucking and warehousing", "operates cold-chain shipping for perishable food"],
    "Manufacturing": ["makes industrial pumps and valves", "assembles electric motors for appliances"],
    "Financial Services": ["offers commercial lending and payments", "manages pension funds for municipalities"],
    "Energy": ["installs solar panels for businesses", "distributes natural gas to industrial sites"],
}
REGIONS = ["East", "West", "North", "South"]
SEGMENTS = ["Enterprise", "Mid-Market", "SMB"]
_PREFIXES = [
    "Acme",
    "Apex",
    "Atlas",
    "Beacon",
    "Blue",
    "Bright",
    "Cedar",
    "Crest",
    "Delta",
    "Eagle",
    "Echo",
    "Ember",
    "Evergreen",
    "Falcon",
    "Fusion",
    "Granite",
    "Harbor",
    "Horizon",
    "Iron",
    "Jade",
    "Keystone",
    "Lumen",
    "Maple",
    "Meridian",
    "Nimbus",
    "Nova",
    "Oak",
    "Orion",
    "Pacific",
    "Peak",
    "Pine",
    "Pioneer",
    "Quantum",
    "Radiant",
    "Redwood",
    "Sierra",
    "Silver",
    "Summit",
    "Titan",
    "Vertex",
    "Vista",
    "Zenith",
]
_SUFFIXES = {
    "Semiconductors": ["Semiconductor", "Microsystems", "Silicon"],
    "Retail": ["Retail", "Stores", "Outfitters"],
    "Healthcare": ["Health", "Care", "Medical"],
    "Software": ["Software", "Labs", "Cloud"],
    "Logistics": ["Logistics", "Freight", "Shipping"],
    "Manufacturing": ["Industries", "Manufacturing", "Works"],
    "Financial Services": ["Capital", "Financial", "Bank"],
    "Energy": ["Energy", "Power", "Solar"],
}


def planted() -> dict[str, Any]:
    """The facts the generator planted, recomputed from the same seed (for tests and the docs)."""
    return _generate()[1]


def demo_table() -> Any:
    """The demo rows as an Arrow table."""
    return _generate()[0]


def _generate() -> tuple[Any, dict[str, Any]]:
    import pyarrow as pa

    rng = np.random.default_rng(SEED)
    n, m = CUSTOMERS, MONTHS
    industries = list(INDUSTRIES)
    industry = rng.choice(len(industries), size=n)
    # The South gets a quarter of the customers but small ones: underserved.
    region = rng.choice(4, size=n, p=[0.27, 0.25, 0.23, 0.25])
    size = rng.lognormal(mean=8.3, sigma=0.9, size=n)  # monthly sales scale: right-skewed
    size[region == 3] *= 0.45
    # The West's customers are larger: more of them are Enterprise.
    size[region == 1] *= 1.45
    tiers = np.quantile(size, [0.8, 0.4])
    segment = np.where(size >= tiers[0], 0, np.where(size >= tiers[1], 1, 2))

    names, descriptions = _names_and_descriptions(rng, industry, industries)
    months = np.arange(m)
    trend = 1 + 0.15 * months / (m - 1)  # +15 % over two years
    season = 1 + 0.10 * np.isin(months % 12, [9, 10, 11])  # Q4 peak
    noise = rng.normal(1.0, 0.06, size=(n, m))
    sales = size[:, None] * trend[None, :] * season[None, :] * noise

    engagement = np.clip(rng.normal(55, 12, size=n), 10, 95)[:, None] + rng.normal(0, 3, size=(n, m))
    tickets = rng.poisson(1.5, size=(n, m)).astype(float)

    # Upsell candidates: very engaged, below their segment's average spend.
    below = np.array([size[i] < np.mean(size[segment == segment[i]]) for i in range(n)])
    upsell = rng.choice(np.flatnonzero(below), size=40, replace=False)
    engagement[upsell] = np.clip(rng.normal(86, 4, size=(40, 1)) + rng.normal(0, 2, size=(40, m)), 75, 99)

    # At risk: engagement falls 40 % over the last three months and tickets rise; mostly in the East.
    east = np.flatnonzero((region == 0) & ~np.isin(np.arange(n), upsell))
    elsewhere = np.flatnonzero((region != 0) & ~np.isin(np.arange(n), upsell))
    at_risk = np.concatenate([rng.choice(east, size=16, replace=False), rng.choice(elsewhere, size=9, replace=False)])
    engagement[at_risk, -3:] *= np.array([0.8, 0.65, 0.55])
    tickets[at_risk, -3:] += np.array([3, 5, 7])

    # Anomalies: one month at three to four times the usual sales.
    spikes = rng.choice(np.setdiff1d(np.arange(n), at_risk), size=5, replace=False)
    spike_month = rng.choice(np.arange(2, m - 2), size=5)
    sales[spikes, spike_month] *= rng.uniform(3.0, 4.0, size=5)

    sales = np.round(sales, 2)
    price = np.round(40 + 10 * industry[:, None] + rng.normal(0, 2, size=(n, m)), 2)
    units = np.maximum(np.round(sales / price), 1).astype(np.int64)
    scores = np.round(np.clip(engagement, 0.0, 100.0), 1)

    month_dates = [date(START.year + (START.month - 1 + k) // 12, (START.month - 1 + k) % 12 + 1, 1) for k in months]
    table = pa.table(
        {
            "customer_id": pa.array(np.repeat(np.arange(1, n + 1), m), pa.int64()),
            "company_name": pa.array(np.repeat(names, m)),
            "description": pa.array(np.repeat(descriptions, m)),
            "industry": pa.array(np.repeat(np.array(industries)[industry], m)),
            "region": pa.array(np.repeat(np.array(REGIONS)[region], m)),
            "segment": pa.array(np.repeat(np.array(SEGMENTS)[segment], m)),
            "month": pa.array(month_dates * n, pa.date32()),
            "sales": pa.array(sales.ravel()),
            "units": pa.array(units.ravel()),
            "engagement_score": pa.array(scores.ravel()),
            "support_tickets": pa.array(tickets.ravel().astype(np.int64)),
        }
    )
    facts = {
        "upsell_customer_ids": sorted(int(i) + 1 for i in upsell),
        "at_risk_customer_ids": sorted(int(i) + 1 for i in at_risk),
        "at_risk_region": "East",
        "anomaly_customer_ids": sorted(int(i) + 1 for i in spikes),
        "underserved_region": "South",
        "growth_over_two_years": 0.15,
        "semiconductor_companies": sorted(str(names[i]) for i in np.flatnonzero(industry == 0)),
    }
    return table, facts


def _names_and_descriptions(rng: Any, industry: Any, industries: list[str]) -> tuple[Any, Any]:
    names: list[str] = []
    descriptions: list[str] = []
    seen: set[str] = set()
    for i, k in enumerate(industry):
        label = industries[k]
        while True:
            name = f"{rng.choice(_PREFIXES)} {rng.choice(_SUFFIXES[label])}"
            if name not in seen:
                seen.add(name)
                break
        what = INDUSTRIES[label][i % 2]
        text = f"{name} {what}."
        if label in ("Logistics", "Manufacturing", "Retail") and rng.random() < 0.35:
            text += " Recently hit by supply chain delays and shipping disruptions."
        elif rng.random() < 0.3:
            text += " Long-standing customer with a dedicated account team."
        names.append(name)
        descriptions.append(text)
    return np.array(names), np.array(descriptions)


DEMO_PROFILE = {
    "domain": "business-to-business sales",
    "entity_name": "customer",
    "entity_key": "customer_id",
    "time_column": "month",
    "field_descriptions": {
        "customer_id": "customer id: the customer's number",
        "company_name": "company name: the customer company's name",
        "description": "description: what the company does, in free text",
        "industry": "industry: the customer's industry",
        "region": "region: sales region of the customer (East, West, North, South)",
        "segment": "segment: customer size tier (Enterprise, Mid-Market, SMB)",
        "month": "month: the month the figures are for (first day of the month)",
        "sales": "sales: revenue from the customer in the month, in dollars",
        "units": "units: number of units the customer bought in the month",
        "engagement_score": "engagement score: how engaged the customer was in the month, 0 to 100",
        "support_tickets": "support tickets: support requests the customer opened in the month",
    },
}


def load_demo(store: Store) -> DataContext:
    """Write the demo rows as Parquet and load them as the source `demo`, like any user file."""
    import tempfile

    import pyarrow.parquet as pq

    from concerto.data.context import ProfileOverrides
    from concerto.data.store import DEMO

    with tempfile.TemporaryDirectory(prefix="concerto-demo-") as tmp:
        path = Path(tmp) / "demo_customers.parquet"
        pq.write_table(demo_table(), path)
        return store.load(path, DEMO, overrides=ProfileOverrides.model_validate(DEMO_PROFILE))
