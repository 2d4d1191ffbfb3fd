"""``dra-metadata show``: one request's metadata, merged across drivers."""

from __future__ import annotations

import argparse

from .._model import DeviceMetadata, MergedDeviceMetadata
from ._common import (
    EXIT_OK,
    Commands,
    add_command,
    add_format,
    add_selection,
    fail,
    write_stdout,
    write_text,
)

__all__ = ["register", "summary"]


def register(commands: Commands) -> None:
    """Add ``show`` to ``commands``."""
    parser = add_command(
        commands,
        "show",
        summary="print the metadata of one request, merged across drivers",
        description="Print the metadata of one request as one JSON document (or a summary).",
    )
    add_selection(parser, required=True, request_required=False)
    add_format(
        parser,
        ("json", "summary"),
        help="json: the wire form, once (default); summary: one block per device",
    )
    parser.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    from .._claims import read_resource_claim, read_resource_claim_template

    if args.claim is not None:
        md = read_resource_claim(args.claim, args.request, driver=args.driver, root=args.root)
    else:
        md = read_resource_claim_template(
            args.template_claim, args.request, driver=args.driver, root=args.root
        )
    if isinstance(md, MergedDeviceMetadata):
        disagreement = md.disagreement()
        if disagreement is not None:
            fail(f"warning: {disagreement}")
    if args.format == "json":
        # imported here, not at the top: the other commands start faster without it
        from .._encode import wire_json

        for piece in wire_json(md):
            write_stdout(piece)
        write_stdout(b"\n")
    else:
        write_text(summary(md))
    return EXIT_OK


def summary(md: DeviceMetadata) -> str:
    """A readable, line-oriented summary of ``md``."""
    lines: list[str] = []
    if md.pod_claim_name is not None:
        lines.append(f"pod claim: {md.pod_claim_name}")
    meta = md.metadata
    if isinstance(md, MergedDeviceMetadata):
        disagreement = md.disagreement()
        if disagreement is not None:
            lines.append(f"claim: (unknown: {disagreement})")
        elif md.sources:
            generations = ", ".join(f"{driver}={n}" for driver, n in md.generations.items())
            lines.append(
                f"claim: {md.claim_namespace}/{md.claim_name} uid={md.claim_uid} "
                f"generation: {generations}"
            )
        for source in md.sources:
            lines.append(
                f"file: {source.path} (claim {source.claim_namespace}/{source.claim_name}, "
                f"uid={source.claim_uid}, generation={source.generation}, {source.api_version})"
            )
    elif meta.name or meta.uid:
        lines.append(
            f"claim: {meta.namespace}/{meta.name} uid={meta.uid} generation={meta.generation}"
        )
    for request in md.requests:
        lines.append(f"request {request.name}: {len(request.devices)} device(s)")
        for device in request.devices:
            lines.append(f"  {device.driver} {device.pool}/{device.name}")
            for key in sorted(device.attributes):
                value = device.attributes[key].value
                lines.append(f"    {key} = {_show_value(value)}")
            net = device.network_data
            if net is not None:
                for wire, field in net.set_fields():
                    text = ", ".join(field) if isinstance(field, tuple) else field
                    lines.append(f"    {wire} = {text}")
    return "\n".join(lines) + "\n"


def _show_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(_show_value(v) for v in value) + "]"
    if value is None:
        return "(no value)"
    return str(value)
