"""The cities table and the matching rules: aliases, states, ambiguity, suggestions, characters."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from concerto.packs.city.cities import CityError, resolve, table
from concerto.packs.city.extract import extract_city


def test_every_city_of_100k_has_state_coordinates_and_a_valid_timezone() -> None:
    big = [c for cities in table().by_name.values() for c in cities if c.population >= 100_000]
    assert len(big) >= 300
    for city in big:
        assert len(city.state) == 2 and -90 <= city.latitude <= 90 and -180 <= city.longitude <= 0
        ZoneInfo(city.timezone)


@pytest.mark.parametrize(
    ("typed", "label", "tz"),
    [
        ("Seattle", "Seattle, WA", "America/Los_Angeles"),
        ("  sEaTtLe ", "Seattle, WA", "America/Los_Angeles"),
        ("NYC", "New York City, NY", "America/New_York"),
        ("new york", "New York City, NY", "America/New_York"),
        ("St. Louis", "St. Louis, MO", "America/Chicago"),
        ("Saint Louis", "St. Louis, MO", "America/Chicago"),
        ("st louis", "St. Louis, MO", "America/Chicago"),
        ("Washington DC", "Washington, DC", "America/New_York"),
        ("Washington, D.C.", "Washington, DC", "America/New_York"),
        ("Springfield, IL", "Springfield, IL", "America/Chicago"),
        ("Springfield Illinois", "Springfield, IL", "America/Chicago"),
        ("Portland", "Portland, OR", "America/Los_Angeles"),
        ("Portland, ME", "Portland, ME", "America/New_York"),
        ("Winston-Salem", "Winston-Salem, NC", "America/New_York"),
        ("winston salem", "Winston-Salem, NC", "America/New_York"),
        ("Coeur d'Alene", "Coeur d'Alene, ID", "America/Los_Angeles"),
        ("Coeur d\u2019Alene", "Coeur d'Alene, ID", "America/Los_Angeles"),
        ("Lee's Summit", "Lee's Summit, MO", "America/Chicago"),
        ("San José", "San Jose, CA", "America/Los_Angeles"),
        ("Cañon City", "Cañon City, CO", "America/Denver"),
        ("Phoenix", "Phoenix, AZ", "America/Phoenix"),
        ("Honolulu", "Honolulu, HI", "Pacific/Honolulu"),
        ("Anchorage", "Anchorage, AK", "America/Anchorage"),
    ],
)
def test_resolve(typed: str, label: str, tz: str) -> None:
    city = resolve(typed)
    assert (city.label, city.timezone) == (label, tz)


def test_ambiguous_name_asks_which() -> None:
    with pytest.raises(CityError) as err:
        resolve("Springfield")
    assert err.value.code == 409 and err.value.reason == "ambiguous_city"
    assert {"Springfield, IL", "Springfield, MO", "Springfield, MA"} <= set(err.value.options)
    assert "Which one?" in err.value.message


def test_unknown_city_suggests_the_closest_real_names() -> None:
    with pytest.raises(CityError) as err:
        resolve("Seatle")
    assert err.value.code == 404 and err.value.options[0] == "Seattle, WA"
    assert "Did you mean Seattle, WA" in err.value.message
    with pytest.raises(CityError) as err:
        resolve("Springfield, TX")
    assert err.value.code == 404 and "in TX" in err.value.message


@pytest.mark.parametrize("typed", ["", "   ", "Seattle; DROP TABLE", "<script>", "a" * 101, "$$$"])
def test_rejected_characters(typed: str) -> None:
    with pytest.raises(CityError) as err:
        resolve(typed)
    assert err.value.code == 400 and err.value.reason == "invalid_city"


@pytest.mark.parametrize(
    ("question", "city"),
    [
        ("what's the weather and the time in Seattle?", "Seattle"),
        ("What time is it in NYC", "NYC"),
        ("temperature in St. Louis please", "St. Louis"),
        ("weather in springfield, IL?", "springfield, IL"),
        ("Is the weather normal in Portland Maine?", "Portland, ME"),
        ("How hot is it in Winston-Salem right now?", "Winston-Salem"),
        ("time in Coeur d'Alene", "Coeur d'Alene"),
        ("what is the time in new york", "new york"),
        ("Honolulu time?", "Honolulu"),
        ("what time is it in Atlantis?", "Atlantis"),
        ("what time is it?", ""),
    ],
)
def test_extract_city(question: str, city: str) -> None:
    assert extract_city(question) == city
