"""The ``dra-metadata`` command line: a function from arguments to an exit code.

Exit codes (the same for every command):

====  ==========================================================
0     success (``validate``: every file is valid)
1     a file decodes but is invalid
2     a file or request directory is missing, or does not decode
64    usage error (bad option, unsafe claim/request/driver name)
====  ==========================================================

Errors are one line on stderr, prefixed ``dra-metadata: ``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Final, NoReturn

from ._errors import DRAMetadataError, InvalidNameError
from ._model import DeviceMetadata, MergedDeviceMetadata

__all__ = ["EXIT_INVALID", "EXIT_OK", "EXIT_UNREADABLE", "EXIT_USAGE", "main"]

EXIT_OK: Final = 0
EXIT_INVALID: Final = 1
EXIT_UNREADABLE: Final = 2
EXIT_USAGE: Final = 64

PROG: Final = "dra-metadata"

_EPILOG: Final = """\
exit codes: 0 success, 1 invalid, 2 missing or undecodable, 64 usage error.
The root defaults to $DRA_METADATA_ROOT, else /var/run/kubernetes.io/dra-device-attributes.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed so the README's ``--help`` text can be tested)."""
    parser = _Parser(
        prog=PROG,
        description="Read the DRA device metadata Kubernetes mounts into containers.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )

    show = commands.add_parser(
        "show",
        help="print the metadata of one request, merged across drivers",
        description="Print the metadata of one request as one JSON document (or a summary).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = show.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--claim", metavar="NAME", help="a claim referenced by name (resourceclaims/NAME)"
    )
    which.add_argument(
        "--template-claim",
        metavar="NAME",
        help="a claim made from a template, by its pod-spec name (resourceclaimtemplates/NAME)",
    )
    show.add_argument(
        "--request", required=True, metavar="NAME", help="request name (req or req/sub)"
    )
    show.add_argument("--driver", metavar="NAME", help="read only this driver's file")
    show.add_argument("--root", metavar="DIR", help="metadata root directory")
    show.add_argument(
        "--format",
        choices=("json", "summary"),
        default="json",
        help="json: the wire form, once (default); summary: one block per device",
    )
    show.set_defaults(handler=_show)

    validate = commands.add_parser(
        "validate",
        help="check files against the Kubernetes validation rules",
        description="Decode each FILE and print its validation errors, Go style.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.set_defaults(handler=_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    try:
        code: int = args.handler(args)
    except InvalidNameError as err:
        _fail(str(err))
        return EXIT_USAGE
    except DRAMetadataError as err:
        _fail(str(err))
        return EXIT_UNREADABLE
    except BrokenPipeError:
        return EXIT_OK
    return code


def _fail(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def _show(args: argparse.Namespace) -> int:
    from ._read import read_resource_claim, read_resource_claim_template

    if args.claim is not None:
        md = read_resource_claim(args.claim, args.request, driver=args.driver, root=args.root)
    else:
        md = read_resource_claim_template(
            args.template_claim, args.request, driver=args.driver, root=args.root
        )
    if isinstance(md, MergedDeviceMetadata):
        for source in md.conflicting_sources:
            _fail(
                f"warning: {source.path} belongs to claim UID {source.claim_uid!r}, "
                f"not {md.sources[0].claim_uid!r}"
            )
    if args.format == "json":
        sys.stdout.write(json.dumps(md.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(summary(md))
    return EXIT_OK


def summary(md: DeviceMetadata) -> str:
    """A readable, line-oriented summary of ``md``."""
    lines: list[str] = []
    if md.pod_claim_name is not None:
        lines.append(f"pod claim: {md.pod_claim_name}")
    meta = md.metadata
    if meta.name or meta.uid:
        lines.append(
            f"claim: {meta.namespace}/{meta.name} uid={meta.uid} generation={meta.generation}"
        )
    if isinstance(md, MergedDeviceMetadata):
        for source in md.sources:
            lines.append(
                f"file: {source.path} (claim {source.claim_namespace}/{source.claim_name}, "
                f"uid={source.claim_uid}, generation={source.generation}, {source.api_version})"
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
                if net.interface_name:
                    lines.append(f"    interfaceName = {net.interface_name}")
                if net.ips:
                    lines.append(f"    ips = {', '.join(net.ips)}")
                if net.hardware_address:
                    lines.append(f"    hardwareAddress = {net.hardware_address}")
    return "\n".join(lines) + "\n"


def _show_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(_show_value(v) for v in value) + "]"
    if value is None:
        return "(no value)"
    return str(value)


def _validate(args: argparse.Namespace) -> int:
    from . import validate
    from ._read import read_file

    worst = EXIT_OK
    for path in args.files:
        try:
            md = read_file(path)
        except DRAMetadataError as err:
            _fail(str(err))
            worst = EXIT_UNREADABLE
            continue
        errors = validate(md)
        for error in errors:
            print(f"{path}: {error}")
        if errors and worst == EXIT_OK:
            worst = EXIT_INVALID
        elif not errors:
            print(f"{path}: valid ({md.api_version})")
    return worst
