"""JSON Schemas of the DeviceMetadata wire form, generated from the validation models.

The schema comes from the same pydantic models with which :func:`dra_metadata.validate`
finds errors (:mod:`dra_metadata._validate_models`); their JSON Schema hooks add
every rule that validation checks and JSON Schema can express, so a document that
the schema accepts is one that validation accepts. Two differences remain, both in favour of
the schema being the looser of the two:

* ``maxLength`` counts characters where Go counts UTF-8 bytes (attribute
  ``strings`` elements, ``interfaceName``, ``hardwareAddress``), so non-ASCII text
  can pass the schema and still be too long for Go;
* ``null`` is left out of the types, as the Go writer never writes it, although Go
  reads it as the zero value.

Run ``python -m dra_metadata._schema [--check] [DIR]`` to write the committed
schema files (default ``schemas/``) or, with ``--check``, to fail when they are
stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic.json_schema import GenerateJsonSchema

from ._validate_models import DeviceMetadata
from ._versions import API_VERSIONS, NEWEST, full_version

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import CoreSchema, core_schema

__all__ = ["SCHEMA_DIALECT", "json_schema", "main", "schema_file_name", "schema_text"]

SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
# The project has no web home yet: a URN names the schema without pointing anywhere.
_ID_BASE: Final = "urn:dra-metadata:schemas:"


class _WireSchemaGenerator(GenerateJsonSchema):
    """pydantic's generator, tuned to describe what the Go writer produces."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        # The models accept null wherever Go does (it reads null as the zero value);
        # written files never hold it, so the schema describes the value alone.
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        # The defaults are Go's zero values, not values a writer should rely on.
        return self.generate_inner(schema["schema"])

    def field_title_should_be_set(self, schema: CoreSchema | Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        # A model's description is its docstring; join its wrapped lines.
        generated = super().model_schema(schema)
        description = generated.get("description")
        if isinstance(description, str):
            generated["description"] = " ".join(description.split())
        return generated


def schema_file_name(api_version: str) -> str:
    """The committed file's name: ``metadata.resource.k8s.io_v1beta1.json`` and so on."""
    return full_version(api_version).replace("/", "_") + ".json"


def json_schema(api_version: str = NEWEST) -> dict[str, object]:
    """The JSON Schema (draft 2020-12) of one apiVersion's DeviceMetadata wire form.

    Loads pydantic. The committed files in ``schemas/`` are this function's output.

    ``api_version`` is ``metadata.resource.k8s.io/v1beta1`` or ``.../v1alpha1`` (the
    version alone, ``v1beta1``, is accepted too). The two schemas differ only in the
    ``apiVersion`` constant.

    >>> json_schema("v1beta1")["properties"]["apiVersion"]["const"]
    'metadata.resource.k8s.io/v1beta1'
    """
    version = full_version(api_version)
    generated = DeviceMetadata.model_json_schema(schema_generator=_WireSchemaGenerator)
    properties = generated["properties"]
    api_property = properties["apiVersion"]
    del api_property["enum"]
    api_property["const"] = version
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": _ID_BASE + schema_file_name(version),
        **generated,
        "title": f"DeviceMetadata ({version})",
        "description": (
            f"One DRA device-metadata object of API version {version} (KEP-5304), as a DRA "
            "driver writes it for a claim's request and a container reads it under "
            "/var/run/kubernetes.io/dra-device-attributes. A file holds a stream of such "
            "objects, one per API version. The schema carries the validation rules of "
            "the Kubernetes v1.37 reference, except that maxLength counts characters "
            "where the reference counts UTF-8 bytes."
        ),
    }


def schema_text(api_version: str) -> str:
    """The committed form of :func:`json_schema`: 2-space indent, sorted keys, final newline."""
    return json.dumps(json_schema(api_version), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the schema files into DIR, or with ``--check`` compare them.

    Exit status: 0 when written or up to date, 1 when ``--check`` finds a file
    missing or different, 2 for a usage error.
    """
    parser = argparse.ArgumentParser(
        prog="python -m dra_metadata._schema",
        description="Generate the JSON Schemas of the DeviceMetadata wire form.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 when a committed schema file is missing or stale",
    )
    parser.add_argument(
        "dir", nargs="?", default="schemas", type=Path, help="target directory (default: schemas)"
    )
    args = parser.parse_args(argv)
    directory: Path = args.dir
    stale = []
    for version in API_VERSIONS:
        path = directory / schema_file_name(version)
        text = schema_text(version)
        if args.check:
            try:
                current = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                current = None
            if current != text:
                stale.append(path)
        else:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
    for path in stale:
        print(f"{path}: out of date; run python -m dra_metadata._schema", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
