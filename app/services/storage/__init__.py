"""Stored files and how they are checked: the checksum every stored file is recorded by, and the original
upload files (content-addressed, moved into place only once their row is committed).

Public: `checksums`, `upload_files`, `capacity` (room left in the stores, for /healthz). Imports nothing of
the other service packages.
"""
