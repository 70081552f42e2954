"""The game demo's tools: a score lookup and venue information, from fixed data.

This is the registry the chat worker offers by default (``DEFAULT_TOOLS`` in
``goaicore_store.chat.tools``, when ``GOAICORE_TOOLS`` is unset); an
application replaces it with its own ``package.module:attribute``. The data is
static so that demos and tests get the same answers every time.
"""

from __future__ import annotations

from goaicore.conversation.tools import Tool, tool

SCORES: dict[str, int] = {"leeds": 42, "harrogate": 37, "york": 29, "ripon": 12}

VENUES: dict[str, dict[str, str]] = {
    "harrogate theatre": {
        "town": "Harrogate",
        "opens": "10:00",
        "clue": "Look for the stage door on Oxford Street.",
    },
    "royal pump room": {
        "town": "Harrogate",
        "opens": "10:30",
        "clue": "The sulphur well is older than the building.",
    },
    "york minster": {
        "town": "York",
        "opens": "09:30",
        "clue": "Count the windows of the Chapter House.",
    },
}


@tool
def score_lookup(team: str) -> dict[str, object]:
    """The current score of a team in the game.

    Args:
        team: The team's name, e.g. Leeds.
    """
    key = team.strip().lower()
    if key not in SCORES:
        known = ", ".join(sorted(t.title() for t in SCORES))
        return {"team": team, "error": f"no such team; teams are {known}"}
    return {"team": key.title(), "points": SCORES[key]}


@tool
def location_info(venue: str) -> dict[str, str]:
    """Opening time and a clue for a venue of the game.

    Args:
        venue: The venue's name, e.g. Harrogate Theatre.
    """
    key = venue.strip().lower()
    for name, info in VENUES.items():
        if key and (key in name or name in key):
            return {"venue": name.title(), **info}
    return {"venue": venue, "error": "unknown venue"}


registry: list[Tool] = [score_lookup, location_info]
