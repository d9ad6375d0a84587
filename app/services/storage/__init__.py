"""Stored files and how they are checked: the checksum every stored file is recorded by, and the original
upload files (content-addressed, made durable only once their row is committed), in the upload folder or
an S3 bucket.

Public: `checksums`, `upload_store` (the originals, in whichever store STORAGE_URL chose: `upload_files`,
the folder, or `upload_objects`, a bucket), `capacity` (room left in the stores, for /healthz). Imports
nothing of the other service packages but `errors`.

May import: app.services.errors, app.settings, app.db, app.models, app.observability.
"""
