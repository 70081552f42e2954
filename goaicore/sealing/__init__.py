"""Crypto-shredding: content sealed per conversation, erasable by destroying one key.

``keys`` holds the key hierarchy (master keys from configuration wrap per-conversation
data keys), ``content`` says which fields of each record are content and which are its
audit skeleton, ``cipher`` seals and opens a record's bytes under a data key, and
``records`` seals and opens whole records; ``aead`` is the AES-GCM under both.
"""
