"""Conditions on a request's metadata: what :func:`~dra_metadata.wait_for` waits for.

The public conditions (:func:`has_network_data`, :func:`has_generation`,
:func:`has_attribute`) and the :class:`Condition` behind them, which can say
why one file's object does not meet it (the "last seen" of a timeout).
:func:`condition_of` turns whatever a caller passes as ``until=`` into one;
:func:`all_of` combines several. :class:`WaitTimeoutError` is what a wait raises
when its condition did not hold in time (in the package's exception tree, drawn in
``dra_metadata._errors``; it lives here, above the model, because it carries the
metadata last seen).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .._errors import DRAMetadataError
from .._model import NETWORK_FIELDS, DeviceMetadata, MergedDeviceMetadata, NetworkDeviceData
from .._standard import has_answer

__all__ = [
    "Condition",
    "WaitTimeoutError",
    "all_of",
    "condition_of",
    "has_attribute",
    "has_generation",
    "has_network_data",
]


def has_network_data(md: DeviceMetadata) -> bool:
    """Whether every device of ``md`` has network data (and there is a device).

    Network data counts when at least one of interface name, IPs and hardware
    address is filled in. The usual condition for :func:`wait_for`.

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim("nic", "eth", root="examples/dra-device-attributes")
    >>> dm.has_network_data(md)
    True
    >>> dm.has_network_data(dm.read_resource_claim_template(
    ...     "gpu", "gpu", root="examples/dra-device-attributes"))
    False
    """
    found = False
    for _request, device in md.devices():
        if not _has_network(device.network_data):
            return False
        found = True
    return found


def _has_network(net: NetworkDeviceData | None) -> bool:
    return isinstance(net, NetworkDeviceData) and bool(
        net.interface_name or net.ips or net.hardware_address
    )


class Condition:
    """A named condition on metadata that can say why one file does not meet it."""

    def __init__(
        self,
        description: str,
        holds: Callable[[DeviceMetadata], bool],
        why_not: Callable[[DeviceMetadata], str | None],
    ) -> None:
        self.description = description
        self._holds = holds
        self._why_not = why_not
        self.__doc__ = f"Whether the metadata has {description}."

    def __call__(self, md: DeviceMetadata) -> bool:
        return self._holds(md)

    def why_not(self, md: DeviceMetadata) -> str | None:
        """Why one file's object does not meet the condition, or ``None``."""
        return self._why_not(md)

    def __repr__(self) -> str:
        return f"<condition: {self.description}>"


def _lacking_network(md: DeviceMetadata) -> str | None:
    devices = [device for _request, device in md.devices()]
    if not devices:
        return "without devices"
    for device in devices:
        if not _has_network(device.network_data):
            return f"without network data (device {device.pool}/{device.name})"
    return None


_NETWORK: Final = Condition("network data on every device", has_network_data, _lacking_network)
_EXISTS: Final = Condition("metadata", lambda md: True, lambda md: None)


def has_generation(generation: int) -> Callable[[DeviceMetadata], bool]:
    """A condition: every file has reached ``generation`` (1 is the first write).

    For a merged read each file's generation counts (see ``sources``); for one
    file its ``metadata.generation``.

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim("nic", "eth", root="examples/dra-device-attributes")
    >>> dm.has_generation(2)(md), dm.has_generation(3)(md)
    (True, False)
    """
    if isinstance(generation, bool) or not isinstance(generation, int):
        raise TypeError(f"generation must be an int, not {type(generation).__name__}")

    def holds(md: DeviceMetadata) -> bool:
        if isinstance(md, MergedDeviceMetadata):
            return bool(md.sources) and all(s.generation >= generation for s in md.sources)
        return md.metadata.generation >= generation

    def why_not(md: DeviceMetadata) -> str | None:
        return None if holds(md) else f"(waiting for generation {generation})"

    return Condition(f"generation {generation} or later", holds, why_not)


def has_attribute(name: str) -> Callable[[DeviceMetadata], bool]:
    """A condition: every device has the attribute ``name`` (and there is a device).

    Names resolve as ``dra-metadata get`` resolves them: an unqualified name
    lives in each device's driver domain, then is the standard attribute of that
    name, and a standard attribute is found under the names drivers publish for
    it today (``pciBusID`` finds NVIDIA's ``pcieBusID``). A standard attribute
    counts by its meaning (the model's answer): a negative ``numaNode`` is no
    NUMA node (KEP-6072), a ``pciBusID`` that is no PCI address is none, and
    ``numaNodes`` / ``pcieRoots`` ask for the whole list.

    While it does not hold, its reason (a timeout's "last seen") names the
    first device without the attribute and what is nearby: for a standard
    attribute why the model has no answer (a negative node, a value not in its
    standard form) or the names tried; else the closest name the device has, or
    that a network data field (``interfaceName``) is no attribute
    (:func:`has_network_data`).

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim_template("gpu", "gpu", root="examples/dra-device-attributes")
    >>> dm.has_attribute("uuid")(md), dm.has_attribute("gpu.example.com/uuid")(md)
    (True, True)
    >>> dm.has_attribute("resource.kubernetes.io/pciBusID")(md)
    False
    """
    if not isinstance(name, str):
        raise TypeError(f"the attribute name must be a str, not {type(name).__name__}")
    if not name:
        raise ValueError("the attribute name must not be empty")

    def holds(md: DeviceMetadata) -> bool:
        found = False
        for _request, device in md.devices():
            if not has_answer(device, name):
                return False
            found = True
        return found

    def why_not(md: DeviceMetadata) -> str | None:
        found = False
        for _request, device in md.devices():
            if not has_answer(device, name):
                from .._nearby import absent_attribute  # only to say why

                said = absent_attribute(device, name) or _network_hint(name)
                where = f"device {device.pool}/{device.name}" + (f": {said}" if said else "")
                return f"without attribute {name} ({where})"
            found = True
        return None if found else "without devices"

    return Condition(f"attribute {name} on every device", holds, why_not)


def _network_hint(name: str) -> str:
    """What to say when ``name`` looks like a network data field, which no attribute holds."""
    # only on the way to a message
    from .._text import closest

    field = name if name in NETWORK_FIELDS else closest(name, NETWORK_FIELDS)
    if field is None:
        return ""
    return f"{field} is network data, not an attribute: wait for has_network_data() (--for network)"


def all_of(*conditions: Callable[[DeviceMetadata], bool]) -> Condition:
    """A condition that holds when all of ``conditions`` hold.

    ``dra-metadata wait`` combines its options with it; the first part that
    does not hold says why.
    """
    parts = [condition_of(condition) for condition in conditions]

    def why_not(md: DeviceMetadata) -> str | None:
        for part in parts:
            reason = part.why_not(md)
            if reason is not None:
                return reason
        return None

    return Condition(
        " and ".join(part.description for part in parts),
        lambda md: all(part(md) for part in parts),
        why_not,
    )


def condition_of(until: Callable[[DeviceMetadata], bool] | None) -> Condition:
    """The :class:`Condition` for ``until=``: ``None`` means "there is metadata at all".

    A plain function gets its name as the description and no reason why not.
    """
    if until is None:
        return _EXISTS
    if until is has_network_data:
        return _NETWORK
    if isinstance(until, Condition):
        return until
    name = getattr(until, "__name__", None) or repr(until)
    return Condition(f"{name}(...) to hold", until, lambda md: None)


class WaitTimeoutError(DRAMetadataError, TimeoutError):
    """``wait_for()`` gave up: the condition did not hold within the timeout.

    The message says what was last seen (no file, a file that does not decode,
    generation 1 without network data ...). ``last_seen`` is the merged metadata
    at that moment, or ``None``; ``path`` is the request directory.
    """

    #: The request's merged metadata when the wait gave up, or ``None``.
    last_seen: MergedDeviceMetadata | None

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        last_seen: MergedDeviceMetadata | None = None,
    ) -> None:
        super().__init__(message, path=path)
        self.last_seen = last_seen

    def __str__(self) -> str:
        return str(self.args[0])
