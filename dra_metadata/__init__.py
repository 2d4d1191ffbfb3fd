"""Read the DRA device metadata that Kubernetes mounts into containers (KEP-5304).

Since Kubernetes v1.36 a DRA driver can hand each container the metadata of the
devices allocated to it, under :data:`CONTAINER_DIR`. This package decodes,
validates, encodes, reads and merges those files with the same answers as the Go
reference (``k8s.io/dynamic-resource-allocation/devicemetadata``, v1.37).

>>> import dra_metadata as dm
>>> md = dm.read_resource_claim_template("gpu", "gpu", root="examples/dra-device-attributes")
>>> [(d.name, d.attribute("index")) for d in md.requests[0].devices]
[('gpu-0', 0), ('gpu-1', 1)]

``import dra_metadata`` is cheap: pydantic (validation, schemas) and watchfiles
load only when the names that need them are first used.
"""

from __future__ import annotations

# Before anything imports msgspec. msgspec 0.23's module initialisation imports the
# datetime C API without checking that it succeeded: a KeyboardInterrupt landing
# while `datetime` is first imported is lost, the API pointer stays NULL, and the
# first Decoder built later crashes the process. With datetime already imported,
# that step runs no Python code and cannot be interrupted. (datetime is imported by
# msgspec anyway: this costs nothing.)
import datetime  # noqa: F401 - first of all, see above
import importlib
from typing import TYPE_CHECKING

from ._errors import (
    AttributeNotFoundError,
    DecodeError,
    DRAMetadataError,
    EnvError,
    FileTooLargeError,
    InvalidNameError,
    MalformedAttributeError,
    MetadataNotFoundError,
    NotMountedError,
    PublishError,
    StaleMetadataError,
    SymlinkError,
)
from ._model import (
    STANDARD_DOMAIN,
    V1ALPHA1,
    V1BETA1,
    AttributeKind,
    AttributeValue,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    DeviceMetadataRequest,
    ManagedFieldsEntry,
    MergedDeviceMetadata,
    MetadataSource,
    NetworkDeviceData,
    ObjectMeta,
    OwnerReference,
    VersionValue,
)
from ._paths import (
    CONTAINER_DIR,
    METADATA_FILE_SUFFIX,
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    ROOT_ENV,
    ClaimKind,
    RootArg,
    default_root,
    resource_claim_file_path,
    resource_claim_template_file_path,
)
from ._read import DEFAULT_MAX_SIZE, decode, read_file, read_request_dir

if TYPE_CHECKING:
    from ._claims import read_resource_claim, read_resource_claim_template
    from ._encode import DEFAULT_VERSIONS, encode
    from ._env import env_vars
    from ._field_error import BadValue, ErrorType, FieldError
    from ._inventory import Inventory, MountedRequest, inventory
    from ._lint import RULES as LINT_RULES
    from ._lint import LintProblem, lint
    from ._live import Check, IpQuery, LiveFinding, LiveReport, check_live
    from ._mounted import MountedDevice
    from ._publish import ClaimRef, MetadataPublisher, UpdateMode
    from ._schema import json_schema
    from ._select import MountedFile, Problem, ProblemKind
    from ._topology import (
        Affinity,
        DeviceKind,
        KindRule,
        Topology,
        TopologyDevice,
        TopologyProblem,
    )
    from ._validate import validate
    from ._variables import ClaimVariable
    from ._watch import (
        Backend,
        MetadataWatcher,
        StopEvent,
        WaitTimeoutError,
        WatchEvent,
        WatchEventKind,
        await_for,
        awatch,
        has_attribute,
        has_generation,
        has_network_data,
        wait_for,
        watch,
    )

__version__ = "0.1.0"

__all__ = [
    "CONTAINER_DIR",
    "DEFAULT_MAX_SIZE",
    "DEFAULT_VERSIONS",
    "LINT_RULES",
    "METADATA_FILE_SUFFIX",
    "RESOURCE_CLAIMS_SUBDIR",
    "RESOURCE_CLAIM_TEMPLATES_SUBDIR",
    "ROOT_ENV",
    "STANDARD_DOMAIN",
    "V1ALPHA1",
    "V1BETA1",
    "Affinity",
    "AttributeKind",
    "AttributeNotFoundError",
    "AttributeValue",
    "Backend",
    "BadValue",
    "Check",
    "ClaimKind",
    "ClaimRef",
    "ClaimVariable",
    "DRAMetadataError",
    "DecodeError",
    "Device",
    "DeviceAttribute",
    "DeviceKind",
    "DeviceMetadata",
    "DeviceMetadataRequest",
    "EnvError",
    "ErrorType",
    "FieldError",
    "FileTooLargeError",
    "InvalidNameError",
    "Inventory",
    "IpQuery",
    "KindRule",
    "LintProblem",
    "LiveFinding",
    "LiveReport",
    "MalformedAttributeError",
    "ManagedFieldsEntry",
    "MergedDeviceMetadata",
    "MetadataNotFoundError",
    "MetadataPublisher",
    "MetadataSource",
    "MetadataWatcher",
    "MountedDevice",
    "MountedFile",
    "MountedRequest",
    "NetworkDeviceData",
    "NotMountedError",
    "ObjectMeta",
    "OwnerReference",
    "Problem",
    "ProblemKind",
    "PublishError",
    "RootArg",
    "StaleMetadataError",
    "StopEvent",
    "SymlinkError",
    "Topology",
    "TopologyDevice",
    "TopologyProblem",
    "UpdateMode",
    "VersionValue",
    "WaitTimeoutError",
    "WatchEvent",
    "WatchEventKind",
    "__version__",
    "await_for",
    "awatch",
    "check_live",
    "decode",
    "default_root",
    "encode",
    "env_vars",
    "has_attribute",
    "has_generation",
    "has_network_data",
    "inventory",
    "json_schema",
    "lint",
    "read_file",
    "read_request_dir",
    "read_resource_claim",
    "read_resource_claim_template",
    "resource_claim_file_path",
    "resource_claim_template_file_path",
    "validate",
    "wait_for",
    "watch",
]

#: Public names loaded on first use, and where they live: watching, linting,
#: validation and schemas (pydantic), the live check and the publisher cost
#: nothing until used, and a command loads only the readers it runs (``get``
#: neither the inventory nor the writer, ``env`` not the claim readers, neither
#: the validation error record). This table is the package's only lazy mechanism.
_LAZY: dict[str, tuple[str, str]] = {
    "read_resource_claim": ("_claims", "read_resource_claim"),
    "read_resource_claim_template": ("_claims", "read_resource_claim_template"),
    "DEFAULT_VERSIONS": ("_encode", "DEFAULT_VERSIONS"),
    "encode": ("_encode", "encode"),
    "env_vars": ("_env", "env_vars"),
    "BadValue": ("_field_error", "BadValue"),
    "ErrorType": ("_field_error", "ErrorType"),
    "FieldError": ("_field_error", "FieldError"),
    **{name: ("_inventory", name) for name in ("Inventory", "MountedRequest", "inventory")},
    **{name: ("_select", name) for name in ("MountedFile", "Problem", "ProblemKind")},
    **{
        name: ("_watch", name)
        for name in (
            "Backend",
            "MetadataWatcher",
            "StopEvent",
            "WaitTimeoutError",
            "WatchEvent",
            "WatchEventKind",
            "await_for",
            "awatch",
            "has_attribute",
            "has_generation",
            "has_network_data",
            "wait_for",
            "watch",
        )
    },
    "LINT_RULES": ("_lint", "RULES"),
    "MountedDevice": ("_mounted", "MountedDevice"),
    "LintProblem": ("_lint", "LintProblem"),
    "lint": ("_lint", "lint"),
    "Check": ("_live", "Check"),
    "ClaimVariable": ("_variables", "ClaimVariable"),
    "IpQuery": ("_live", "IpQuery"),
    "LiveFinding": ("_live", "LiveFinding"),
    "LiveReport": ("_live", "LiveReport"),
    "check_live": ("_live", "check_live"),
    "ClaimRef": ("_publish", "ClaimRef"),
    "MetadataPublisher": ("_publish", "MetadataPublisher"),
    "UpdateMode": ("_publish", "UpdateMode"),
    **{
        name: ("_topology", name)
        for name in (
            "Affinity",
            "DeviceKind",
            "KindRule",
            "Topology",
            "TopologyDevice",
            "TopologyProblem",
        )
    },
    "validate": ("_validate", "validate"),
    "json_schema": ("_schema", "json_schema"),
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
