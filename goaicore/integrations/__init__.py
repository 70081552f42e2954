"""Adapters that put goaicore's store behind other frameworks' interfaces, each a thin
layer over the store port (:class:`goaicore.store.port.ConversationStore`)."""
