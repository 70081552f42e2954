"""Faust's aiohttp web server, serving this API alone.

Faust mounts its own pages (tables, router, stats, an index at ``/``); the
store app turns the flagged ones off, and this driver drops the index, so every
route the server has is one the OpenAPI document describes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from faust.web.drivers.aiohttp import Web

from goaicore.kafka.faust.flow_control import SteadyApp


class ApiOnlyWeb(Web):
    """The aiohttp driver without Faust's production index page."""

    production_blueprints: ClassVar[Any] = ()


class ApiApp(SteadyApp):
    """The store's Faust app, with :class:`ApiOnlyWeb` as its web server."""

    def _new_web(self) -> Web:
        return ApiOnlyWeb(self)
