"""Crypto-shredding: content sealed per conversation, erasable by destroying one key.

``keys`` holds the key hierarchy (master keys from configuration wrap per-conversation
data keys), ``content`` says which fields of each record are content and which are its
audit skeleton, and ``cipher`` seals and opens content under a data key.
"""
