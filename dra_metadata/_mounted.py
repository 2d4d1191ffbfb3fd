"""A mounted device: a device with the claim and request it was allocated for.

:class:`MountedDevice` is what :meth:`Inventory.devices()
<dra_metadata.Inventory.devices>` lists and what the topology and the live check
read. It sits below all three (it imports the model only), and loads when the
first one is made: ``env`` and ``ls`` never make one.
"""

from __future__ import annotations

import msgspec

# At run time too: the fields name them (typing.get_type_hints(), help()).
from ._model import AttributeValue, Device, DeviceAttribute, NetworkDeviceData
from ._paths import ClaimKind, claim_label
from ._standard import DeviceKind

__all__ = ["MountedDevice"]


class MountedDevice(msgspec.Struct, frozen=True, gc=False):
    """A device, with the claim and request it was allocated for.

    It reads like a :class:`~dra_metadata.Device` (``driver``, ``name``,
    ``attribute()``, ``pci_bus_id``, ``numa_nodes`` ...); ``device`` is the
    device itself. ``request`` is the request's name as allocated
    (``gpu/high-memory`` for a subrequest), ``base_request`` its directory.
    """

    #: The device itself, as decoded.
    device: Device
    #: How the pod references the device's claim: ``claim`` or ``template``.
    kind: ClaimKind
    #: The claim's directory name: its name, or the pod's claim name for a template.
    claim: str
    #: The request's name as allocated: ``gpu``, or ``gpu/high-memory`` for a subrequest.
    request: str
    #: The request directory the device was read from (the name before any ``/``).
    base_request: str

    @property
    def driver(self) -> str:
        """The DRA driver that allocated the device."""
        return self.device.driver

    @property
    def pool(self) -> str:
        """The resource pool the device is in."""
        return self.device.pool

    @property
    def name(self) -> str:
        """The device's name within its pool."""
        return self.device.name

    @property
    def id(self) -> str:
        """``<driver>/<pool>/<name>``: unique within a cluster."""
        return f"{self.device.driver}/{self.device.pool}/{self.device.name}"

    @property
    def attributes(self) -> dict[str, DeviceAttribute]:
        """The device's attributes, as its driver keyed them."""
        return self.device.attributes

    @property
    def network_data(self) -> NetworkDeviceData | None:
        """The device's network data, when its driver reported any."""
        return self.device.network_data

    def attribute(self, name: str, default: AttributeValue | None = None) -> AttributeValue | None:
        """The value of attribute ``name`` (see :meth:`Device.attribute`)."""
        return self.device.attribute(name, default)

    def find_attribute(self, name: str) -> DeviceAttribute | None:
        """The attribute entry for ``name`` (see :meth:`Device.find_attribute`)."""
        return self.device.find_attribute(name)

    def require(self, name: str) -> AttributeValue:
        """The value of attribute ``name``, else an error naming what is close (see
        :meth:`Device.require`)."""
        return self.device.require(name)

    @property
    def pci_bus_id(self) -> str | None:
        """The PCI address in the standard form (see :attr:`Device.pci_bus_id`)."""
        return self.device.pci_bus_id

    @property
    def pci_bus_id_source(self) -> str | None:
        """The attribute :attr:`pci_bus_id` comes from."""
        return self.device.pci_bus_id_source

    @property
    def pcie_roots(self) -> tuple[str, ...]:
        """The standard ``pcieRoot``, as a tuple (see :attr:`Device.pcie_roots`)."""
        return self.device.pcie_roots

    @property
    def pcie_root(self) -> str | None:
        """The PCIe root when there is exactly one."""
        return self.device.pcie_root

    @property
    def numa_nodes(self) -> tuple[int, ...]:
        """The NUMA nodes the device is local to (see :attr:`Device.numa_nodes`)."""
        return self.device.numa_nodes

    @property
    def numa_source(self) -> str | None:
        """The attribute :attr:`numa_nodes` comes from."""
        return self.device.numa_source

    @property
    def numa_node(self) -> int | None:
        """The device's physical NUMA node (see :attr:`Device.numa_node`)."""
        return self.device.numa_node

    @property
    def device_kind(self) -> DeviceKind:
        """The device's kind (see :attr:`Device.device_kind`)."""
        return self.device.device_kind

    @property
    def claim_label(self) -> str:
        """How messages name the claim: ``claim 'nic'`` or ``template claim 'gpu'``."""
        return claim_label(self.kind, self.claim)
