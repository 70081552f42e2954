"""What the console's pages find on the application (typed aiohttp keys)."""

from __future__ import annotations

from aiohttp import web

from goaicore.settings import Settings
from goaicore_console.database import Database
from goaicore_console.verify_job import VerifyJobs

SETTINGS_KEY = web.AppKey("settings", Settings)
DATABASE_KEY = web.AppKey("database", Database)
JOBS_KEY = web.AppKey("verify_jobs", VerifyJobs)
