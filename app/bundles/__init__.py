"""Bundle files: a benchmark described whole by one reviewed `benchmark.yaml` and the files it names, each pinned
by sha256. The models of the file (model), reading a folder or a .zip with every problem named by key path and
line and every hostile input refused cheaply (reading), the canonical form written back (writing) and the JSON
Schema of the file (schema). Pure: no Flask, no database; applying a bundle to a server is the services' job.

May import: app.evaluation
"""

from .model import Bundle, EntryFieldSpec, FileRef, Phase, Policy, ReferenceSpec, SplitSpec, SubsetSpec, TrackSpec
from .reading import MAX_FILE_BYTES, MAX_YAML_BYTES, BundleError, LoadedBundle, Problem, read_bundle, read_bundle_zip
from .schema import SCHEMA_PATH, bundle_schema
from .writing import bundle_zip, canonical_files, canonical_yaml, write_bundle

__all__ = [
    "Bundle",
    "EntryFieldSpec",
    "FileRef",
    "Phase",
    "Policy",
    "ReferenceSpec",
    "SplitSpec",
    "SubsetSpec",
    "TrackSpec",
    "MAX_FILE_BYTES",
    "MAX_YAML_BYTES",
    "BundleError",
    "LoadedBundle",
    "Problem",
    "read_bundle",
    "read_bundle_zip",
    "SCHEMA_PATH",
    "bundle_schema",
    "bundle_zip",
    "canonical_files",
    "canonical_yaml",
    "write_bundle",
]
