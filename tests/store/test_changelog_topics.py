"""The tables' changelogs are written and recovered, never acknowledged like streams.

Faust's monitor treats an acking topic whose end runs ahead of the consumer's
position as a stalled stream; a changelog the worker writes after recovery always
does, so an acking changelog logs an error every few seconds once the worker has
run for ``stream_processing_timeout`` (five minutes), however healthy it is.
"""

from __future__ import annotations

from goaicore.config import Settings


def test_no_table_changelog_is_an_acking_topic(settings: Settings) -> None:
    from goaicore_store.app import create_app

    store = create_app(settings)
    changelogs = [table.changelog_topic for table in store.app.tables.values()]
    assert {t.get_topic_name() for t in changelogs} == {
        settings.topic("snapshots"),
        settings.topic("keys"),
        f"{store.app.conf.id}-replies-changelog",
    }
    assert [t.acks for t in changelogs] == [False, False, False]
    streamed = [store.events, store.requests]
    assert all(t.acks for t in streamed)  # their offsets are committed as they are handled
