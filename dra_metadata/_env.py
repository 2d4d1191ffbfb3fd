"""Device metadata as environment variables: names, values and three output formats.

This is what ``dra-metadata env`` prints, as pure functions over decoded metadata
(:func:`env_vars` is the one that reads a root).

Names
=====

Every request directory gets the prefix ``DRA_<CLAIM>_<REQUEST>_``: the claim's
directory name (the claim name, or for a claim made from a template its
name in the pod spec) and the request's directory name, upper-cased, every character other
than ``A-Z`` and ``0-9`` turned into ``_`` (``my-gpu`` -> ``MY_GPU``). ``DRA_``
can be replaced (``prefix=``). With ``P`` that prefix:

==============================  =====================================================
``P COUNT``                     number of devices (``2``)
``P DEVICES``                   device names, in merged device order
``P DRIVERS``                   distinct drivers, in device order
``P REQUEST``                   the request name(s) in the files (``gpu/high-memory``)
``P <ATTR>``                    an attribute or network field every device has: the
                                values in device order, comma-joined (list values
                                only when the request has one device)
``P <i>_NAME``, ``_DRIVER``,    device ``i`` (0-based, merged order)
``_POOL``
``P <i>_<ATTR>``                each attribute of device ``i`` that has a value
``P <i>_INTERFACE_NAME``,       its network data, when set
``_IPS``, ``_HARDWARE_ADDRESS``
==============================  =====================================================

``<ATTR>`` is the attribute's local name in UPPER_SNAKE (``pciBusID`` ->
``PCI_BUS_ID``: a capital after a lower-case letter or digit, or a capital
followed by a lower-case letter after another capital, starts a word). It is
qualified with the domain (``resource.kubernetes.io/pciBusID`` ->
``RESOURCE_KUBERNETES_IO_PCI_BUS_ID``) when two attributes of the request share
the local name, when the name is one of the fixed ones above, or when it would
start with a digit. The choice is made once per request, so every device names
an attribute the same way.

Values: integers in decimal, booleans ``true``/``false``, strings and versions as
written, lists joined with ``,`` (use the JSON output when an element may hold a
comma).

Two sources that map to one name (claims ``a-b`` and ``a_b``, a claim and a
template claim of the same name, two attribute keys ``a.b/x`` and ``a-b/x``)
are an :class:`~dra_metadata.EnvError` naming both; neither is written. So is a
value holding a NUL character, which no environment variable can hold.

Formats
=======

``shell``
    ``export NAME=value``, the value in single quotes unless it only has
    characters no shell treats specially (a ``'`` is written ``'\\''``). Safe
    to ``eval`` or ``.`` in POSIX sh and bash, and every value comes back exactly.
``dotenv``
    ``NAME=value`` for the docker compose ``env_file`` syntax (also read as
    written by python-dotenv with ``interpolate=False``). Values made only of
    ``A-Za-z0-9_-.,/:@+=%`` are written bare, which ``docker run --env-file``
    (it takes the rest of the line as is) reads the same. Other values are
    double-quoted with ``\\\\``, ``\\"``, ``\\n`` and ``\\r`` escapes, or, when they
    hold a ``$`` (which compose expands inside double quotes), single-quoted with
    ``'`` written ``\\'``. Some values have no form both readers take back
    exactly: one that ends with a backslash, and one with a ``$`` that also holds
    a carriage return, two backslashes in a row or a backslash before a ``'``.
    They are left out with an :class:`~dra_metadata.EnvError`. (python-dotenv's
    default ``interpolate=True`` also expands ``${NAME}`` in single quotes.)
``json``
    One JSON object, names in the order above.

>>> print(shell_line("DRA_NIC_ETH_0_PF_NAME", "enp94s0f0"))
export DRA_NIC_ETH_0_PF_NAME=enp94s0f0
>>> print(shell_line("X", "it's $(here)"))
export X='it'\\''s $(here)'
>>> print(dotenv_line("X", 'say "hi"'))
X="say \\"hi\\""
>>> snake_name("pciBusID"), snake_name("HTTPServer"), env_name("vfio-gpu")
('PCI_BUS_ID', 'HTTP_SERVER', 'VFIO_GPU')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from ._errors import DRAMetadataError, EnvError
from ._model import (
    DOMAIN_SEPARATOR,
    NETWORK_FIELDS,
    AttributeValue,
    DeviceMetadata,
    NetworkDeviceData,
)
from ._paths import RootArg, root_path
from ._read import DEFAULT_MAX_SIZE

if TYPE_CHECKING:
    from ._inventory import Inventory

__all__ = [
    "DEFAULT_PREFIX",
    "FORMATS",
    "Format",
    "collect",
    "dotenv_line",
    "env_name",
    "env_vars",
    "format_value",
    "render",
    "request_variables",
    "shell_line",
    "snake_name",
]

#: The prefix of every variable unless another is asked for.
DEFAULT_PREFIX: Final = "DRA_"

Format = Literal["shell", "dotenv", "json"]
#: The output formats of :func:`render`, the default first.
FORMATS: Final[tuple[Format, ...]] = ("shell", "dotenv", "json")

_ALNUM: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_UPPER: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER_OR_DIGIT: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LOWER: Final = frozenset("abcdefghijklmnopqrstuvwxyz")
#: A run of characters that no shell and no dotenv reader treats specially.
_PLAIN_TEXT: Final = re.compile(r"[A-Za-z0-9_\-.,/:@+=%]+")
#: A character that is not ASCII alphanumeric.
_NOT_ALNUM: Final = re.compile(r"[^A-Za-z0-9]")
_NAME_START: Final = _UPPER | frozenset("abcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS: Final = _NAME_START | frozenset("0123456789")

_COUNT: Final = "COUNT"
_DEVICES: Final = "DEVICES"
_DRIVERS: Final = "DRIVERS"
_REQUEST: Final = "REQUEST"
_NAME: Final = "NAME"
_DRIVER: Final = "DRIVER"
_POOL: Final = "POOL"


def env_name(text: str) -> str:
    """``text`` upper-cased, every character other than ``A-Z``/``0-9`` turned into ``_``.

    >>> env_name("gpu.example.com"), env_name("a_b"), env_name("café")
    ('GPU_EXAMPLE_COM', 'A_B', 'CAF_')
    """
    return _NOT_ALNUM.sub("_", text).upper()


def snake_name(text: str) -> str:
    """A camelCase (or any) attribute name in UPPER_SNAKE.

    >>> snake_name("numaNodeID"), snake_name("gpu0Memory"), snake_name("already_snake")
    ('NUMA_NODE_ID', 'GPU0_MEMORY', 'ALREADY_SNAKE')
    """
    out: list[str] = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch in _UPPER and i > 0:
            before = text[i - 1]
            if before in _LOWER_OR_DIGIT or (
                before in _UPPER and i < last and text[i + 1] in _LOWER
            ):
                out.append("_")
        out.append(ch.upper() if ch in _ALNUM else "_")
    return "".join(out)


#: Network data fields: wire name -> variable name (``interfaceName`` -> ``INTERFACE_NAME``).
_NETWORK_VARIABLES: Final = {wire: snake_name(wire) for wire in NETWORK_FIELDS}
#: Names an attribute cannot have unqualified.
_RESERVED: Final = frozenset(
    {_COUNT, _DEVICES, _DRIVERS, _REQUEST, _NAME, _DRIVER, _POOL, *_NETWORK_VARIABLES.values()}
)


def valid_prefix(prefix: str) -> bool:
    """Whether ``prefix`` can start an environment variable name (``[A-Za-z_][A-Za-z0-9_]*``)."""
    return bool(prefix) and prefix[0] in _NAME_START and all(ch in _NAME_CHARS for ch in prefix)


def format_value(value: AttributeValue) -> str:
    """An attribute value as text: ``true``/``false``, decimal, as is, lists comma-joined.

    >>> format_value(True), format_value(-3), format_value((0, 1)), format_value(("a", "b"))
    ('true', '-3', '0,1', 'a,b')
    """
    if isinstance(value, tuple):
        return ",".join(format_value(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Variable(msgspec.Struct, frozen=True, gc=False):
    """One variable, with where it came from (for error messages)."""

    name: str
    value: str
    #: The request it belongs to: ``claim 'nic' request 'eth'``.
    source: str
    #: What in the request, if not the request as a whole: ``device 0 attribute 'uuid'``.
    detail: str = ""

    def origin(self) -> str:
        """``source`` and ``detail`` in one phrase."""
        return f"{self.source} {self.detail}" if self.detail else self.source


def _network_values(network: NetworkDeviceData | None) -> dict[str, tuple[str, bool]]:
    """Network field variable name -> (text, is a list), for the fields that are set."""
    found: dict[str, tuple[str, bool]] = {}
    if network is not None:
        for wire, value in network.set_fields():
            if isinstance(value, tuple):
                found[_NETWORK_VARIABLES[wire]] = (",".join(value), True)
            else:
                found[_NETWORK_VARIABLES[wire]] = (value, False)
    return found


class _Value(msgspec.Struct, frozen=True, gc=False):
    """One attribute value of one device, ready to print."""

    text: str
    is_list: bool
    detail: str


def request_variables(prefix: str, source: str, md: DeviceMetadata) -> list[Variable]:
    """The variables of one request directory's (merged) metadata, in output order.

    ``prefix`` is the request's full prefix (``DRA_GPU_GPU_``), ``source`` names it
    in messages. Names are not checked for collisions here (see :func:`collect`).
    """
    devices = [device for _, device in md.devices()]
    # Per device: attribute key -> (qualified name, value), keys without a value left out.
    keyed: list[dict[str, tuple[str, AttributeValue]]] = []
    for device in devices:
        found: dict[str, tuple[str, AttributeValue]] = {}
        for key, attribute in device.attributes.items():
            value = attribute.value
            if value is not None:
                qualified = key if DOMAIN_SEPARATOR in key else device.driver + "/" + key
                found[key] = (qualified, value)
        keyed.append(found)
    var_of = _attribute_variable_names({q for found in keyed for q, _ in found.values()})
    single = len(devices) == 1
    # Per device: (variable name part, value) in name order (two when two keys share
    # a name); per name part: its one value on each device, while every device so far
    # has had exactly one (a scalar unless the request has one device), else None.
    per_device: list[list[tuple[str, _Value]]] = []
    columns: dict[str, list[str] | None] = {}
    for index, found in enumerate(keyed):
        entries = sorted(
            (
                var_of[qualified],
                key,
                _Value(
                    format_value(value),
                    isinstance(value, tuple),
                    f"device {index} attribute {key!r}",
                ),
            )
            for key, (qualified, value) in found.items()
        )
        per_device.append([(var, entry) for var, _, entry in entries])
        counts: dict[str, int] = {}
        for var, _, _ in entries:
            counts[var] = counts.get(var, 0) + 1
        for var, _, entry in entries:
            column = columns.get(var, [] if index == 0 else None)
            if column is not None and len(column) == index:
                if counts[var] == 1 and (single or not entry.is_list):
                    column.append(entry.text)
                else:
                    column = None
            else:
                column = None
            columns[var] = column
    network = [_network_values(device.network_data) for device in devices]
    network_vars = list(_NETWORK_VARIABLES.values())

    variables: list[Variable] = []

    def add(name: str, value: str, detail: str = "") -> None:
        variables.append(Variable(prefix + name, value, source, detail))

    add(_COUNT, str(len(devices)))
    add(_DEVICES, ",".join(device.name for device in devices))
    add(_DRIVERS, ",".join(dict.fromkeys(device.driver for device in devices)))
    add(_REQUEST, ",".join(dict.fromkeys(request.name for request in md.requests)))
    for var in sorted(columns):  # on every device, once, and a scalar unless only one device
        column = columns[var]
        if column is not None and len(column) == len(devices):
            add(var, ",".join(column), f"attribute {var}")
    for var in network_vars:
        fields = [found.get(var) for found in network]
        if devices and all(field is not None and (single or not field[1]) for field in fields):
            add(var, ",".join(field[0] for field in fields if field), f"network field {var}")
    for index, device in enumerate(devices):
        at = f"{index}_"
        add(at + _NAME, device.name, f"device {index}")
        add(at + _DRIVER, device.driver, f"device {index}")
        add(at + _POOL, device.pool, f"device {index}")
        for var, entry in per_device[index]:
            add(at + var, entry.text, entry.detail)
        for var in network_vars:
            field = network[index].get(var)
            if field is not None:
                add(at + var, field[0], f"device {index} network field {var}")
    return variables


def _attribute_variable_names(qualified_names: Iterable[str]) -> dict[str, str]:
    """Qualified attribute name -> the variable name part it gets in its request."""
    split = {name: name.rpartition(DOMAIN_SEPARATOR) for name in qualified_names}
    short_count: dict[str, int] = {}
    for _domain, _, local in split.values():
        short = snake_name(local)
        short_count[short] = short_count.get(short, 0) + 1
    names: dict[str, str] = {}
    for name, (domain, _, local) in split.items():
        short = snake_name(local)
        if (
            short
            and short_count[short] == 1
            and short not in _RESERVED
            and short[0] not in "0123456789"
        ):
            names[name] = short
        else:
            names[name] = env_name(domain) + "_" + short
    return names


def source_label(kind: str, claim: str, request: str | None) -> str:
    """How messages name a request directory: ``template claim 'gpu' request 'gpu'``."""
    word = "claim" if kind == "claim" else "template claim"
    return f"{word} {claim!r}" + ("" if request is None else f" request {request!r}")


def collect(
    inv: Inventory, *, prefix: str = DEFAULT_PREFIX
) -> tuple[dict[str, str], list[DRAMetadataError]]:
    """The variables of an inventory's requests, and the problems that kept some out.

    A request directory with a file that does not read or decode gets no
    variables at all (its device list would be incomplete); variables that two
    sources map to, and values holding a NUL, are left out. Each problem is one
    error; the variables that remain come back in output order.
    """
    problems: list[DRAMetadataError] = []
    candidates: list[Variable] = []
    requests = iter(inv.requests)
    seen: set[tuple[str, str, str]] = set()
    for file in inv.files:  # in walk order, so that problems come in that order too
        key = (file.kind, file.claim, file.request)
        if key in seen:
            continue
        seen.add(key)
        if not file.request:  # a claim directory that could not be read
            assert file.problem is not None
            problems.append(file.problem.error)
            continue
        mounted = next(requests)
        if mounted.problems or mounted.metadata is None:
            problems.append(mounted.problems[0].error)
            continue
        request_prefix = f"{prefix}{env_name(mounted.claim)}_{env_name(mounted.request)}_"
        source = source_label(mounted.kind, mounted.claim, mounted.request)
        candidates.extend(request_variables(request_prefix, source, mounted.metadata))
    return _checked(candidates, problems)


def _checked(
    candidates: list[Variable], problems: list[DRAMetadataError]
) -> tuple[dict[str, str], list[DRAMetadataError]]:
    """Leave out colliding names (one error per pair of sources) and NUL values."""
    by_name: dict[str, list[Variable]] = {}
    for variable in candidates:
        by_name.setdefault(variable.name, []).append(variable)
    # One message per pair of colliding sources: a whole request colliding is one line.
    pairs: dict[tuple[str, str], list[str]] = {}
    firsts: dict[tuple[str, str], tuple[Variable, Variable]] = {}
    for name, same in by_name.items():
        if len(same) > 1:
            key = (same[0].origin(), same[1].origin())
            if same[0].source != same[1].source:
                key = (same[0].source, same[1].source)
            pairs.setdefault(key, []).append(name)
            firsts.setdefault(key, (same[0], same[1]))
    for key, names in pairs.items():
        a, b = firsts[key]
        more = f" (and {len(names) - 1} more names they share)" if len(names) > 1 else ""
        problems.append(
            EnvError(f"{names[0]}: {a.origin()} and {b.origin()} map to the same name{more}")
        )
    result: dict[str, str] = {}
    for variable in candidates:
        if len(by_name[variable.name]) > 1:
            continue
        if "\x00" in variable.value:
            problems.append(
                EnvError(
                    f"{variable.name}: the value of {variable.origin()} holds a NUL character, "
                    "which no environment variable can hold"
                )
            )
            continue
        result[variable.name] = variable.value
    return result, problems


def env_vars(
    *,
    root: RootArg = None,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str | None = None,
    driver: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    max_size: int = DEFAULT_MAX_SIZE,
    profile: str | Iterable[str] | None = None,
) -> dict[str, str]:
    """The environment variables ``dra-metadata env`` prints, in the same order.

    With ``profile`` (``"cuda"``, or several: ``["cuda", "nccl"]``), the
    variables of those framework profiles instead (see
    :mod:`dra_metadata._profiles`); one that cannot be built raises
    :class:`~dra_metadata.EnvError` saying what is missing.

    Reads every request under ``root`` (default ``$DRA_METADATA_ROOT``, else the
    container directory), or those of the claim named ``claim``, of the claim
    made from a template that the pod spec calls ``pod_claim`` (as in
    :func:`watch`), of requests named ``request`` or of one ``driver``.
    The naming scheme is described in the module :mod:`dra_metadata._env`
    (and the README): ``DRA_<CLAIM>_<REQUEST>_...``. Symbolic links below the
    root are not followed.

    Raises :class:`~dra_metadata.MetadataNotFoundError` when the root, or what
    was asked for, is not there, :class:`~dra_metadata.DecodeError` for a file
    that does not decode, and :class:`~dra_metadata.EnvError` when two sources
    map to one name or a value holds a NUL (the CLI prints the rest instead).

    >>> import dra_metadata as dm
    >>> env = dm.env_vars(root="examples/dra-device-attributes", pod_claim="gpu")
    >>> env["DRA_GPU_GPU_COUNT"], env["DRA_GPU_GPU_1_INDEX"]
    ('2', '1')
    >>> env["DRA_GPU_GPU_UUID"].split(",")[0]
    'GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11'
    """
    from ._inventory import from_entries
    from ._scan import scan

    if claim is not None and pod_claim is not None:
        raise ValueError("env_vars(): give claim or pod_claim, not both")
    if not isinstance(prefix, str) or not valid_prefix(prefix):
        raise ValueError(f"env_vars(): prefix {prefix!r} cannot start a variable name")
    entries = scan(
        root,
        kind="claim" if claim is not None else "template" if pod_claim is not None else None,
        claim=claim if claim is not None else pod_claim,
        request=request,
        driver=driver,
        max_size=max_size,
    )
    if profile is not None:
        from ._profiles import profile_variables

        names = [profile] if isinstance(profile, str) else list(profile)
        return profile_variables(from_entries(root_path(root), entries), names)
    variables, problems = collect(from_entries(root_path(root), entries), prefix=prefix)
    if problems:
        raise problems[0]
    return variables


def shell_line(name: str, value: str) -> str:
    """``export NAME=value`` for POSIX sh and bash, quoted when needed."""
    if _PLAIN_TEXT.fullmatch(value):
        return f"export {name}={value}"
    return "export " + name + "='" + value.replace("'", "'\\''") + "'"


def dotenv_line(name: str, value: str) -> str:
    """``NAME=value`` in the dotenv syntax of docker compose; raises :class:`EnvError`."""
    if not value or _PLAIN_TEXT.fullmatch(value):
        return f"{name}={value}"
    if value.endswith("\\"):
        # python-dotenv takes the backslash and the closing quote for an escaped
        # quote, and compose cannot end a single-quoted value with one.
        raise EnvError(
            f"{name}: the value ends with a backslash: no dotenv form reads back the same "
            "(use --format shell or json)"
        )
    if "$" not in value:
        escaped = (
            value.replace("\\", "\\\\")
            .replace('"', '\\"')
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )
        return f'{name}="{escaped}"'
    if "\r" in value or "\\\\" in value or "\\'" in value:
        raise EnvError(
            f"{name}: the value holds a '$' and a carriage return or a backslash before "
            "a backslash or a quote: no dotenv form reads back the same "
            "(use --format shell or json)"
        )
    return name + "='" + value.replace("'", "\\'") + "'"


def render(variables: Mapping[str, str], format: Format = "shell") -> tuple[bytes, list[EnvError]]:  # noqa: A002 - the option's name
    """The variables in ``format`` as UTF-8 bytes, and the ones the format cannot hold.

    Only ``dotenv`` can refuse a value (see the module docs); refused variables
    are left out and reported, the others written.

    >>> text, refused = render({"A": "1", "B": "x y"}, "json")
    >>> print(text.decode(), end="")
    {
      "A": "1",
      "B": "x y"
    }
    """
    if format == "json":
        return msgspec.json.format(msgspec.json.encode(dict(variables)), indent=2) + b"\n", []
    lines: list[str] = []
    refused: list[EnvError] = []
    for name, value in variables.items():
        if format == "shell":
            lines.append(shell_line(name, value))
        elif format == "dotenv":
            try:
                lines.append(dotenv_line(name, value))
            except EnvError as err:
                refused.append(err)
        else:
            raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    text = "".join(line + "\n" for line in lines)
    return text.encode("utf-8"), refused
