"""The package's exceptions (the validation error record is :mod:`._field_error`).

Exception tree::

    DRAMetadataError                    root of everything this package raises
    ├── DecodeError(ValueError)         a stream or file that cannot be decoded
    ├── MetadataNotFoundError(FileNotFoundError)
    │   │                               no file, or no metadata files in a request directory
    │   └── NotMountedError             not mounted in this container, so never will be
    ├── StaleMetadataError              a mounted file replaced on the node: it cannot change
    ├── InvalidNameError(ValueError)    a claim, request or driver name that is not a safe path part
    ├── FileTooLargeError(ValueError)   a file over the configured size cap
    ├── SymlinkError                    a symbolic link in the layout, not followed
    ├── EnvError(ValueError)            metadata that cannot become environment variables
    ├── AttributeNotFoundError(LookupError)
    │                                   a device without the attribute asked for
    ├── MalformedAttributeError(ValueError)
    │                                   a standard attribute the standard does not define
    ├── WaitTimeoutError(TimeoutError)  a wait whose condition did not hold in time
    └── PublishError                    a driver's metadata that could not be written or removed

"Not there (yet)" and "broken" are different classes because callers act
differently on them: an init container waits on the first and fails on the second.

This module is the package's lowest layer: it imports none of the others.
``WaitTimeoutError`` carries the metadata last seen, so it lives above the model,
with the conditions a wait waits for (``dra_metadata._watch._conditions``).
"""

from __future__ import annotations

import os

__all__ = [
    "AttributeNotFoundError",
    "DRAMetadataError",
    "DecodeError",
    "EnvError",
    "FileTooLargeError",
    "InvalidNameError",
    "MalformedAttributeError",
    "MetadataNotFoundError",
    "NotMountedError",
    "PublishError",
    "StaleMetadataError",
    "SymlinkError",
    "os_reason",
]


class DRAMetadataError(Exception):
    """Root of every exception raised by :mod:`dra_metadata`.

    ``path`` is the file or directory the error is about, when there is one.
    """

    #: The file or directory the error is about, when there is one.
    path: str | None

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class DecodeError(DRAMetadataError, ValueError):
    """A metadata stream could not be decoded.

    The message starts with the same prefix as the Go reference's error
    (``no metadata objects found in stream``, ``read metadata object from stream: ``,
    ``decode metadata object: ``, ``decode <group/version>: `` or
    ``no compatible metadata version found in stream (unknown versions: ...)``).
    Errors that come from a file are prefixed with the file's path, as in Go.

    >>> import dra_metadata as dm
    >>> try:
    ...     dm.decode(b"")
    ... except dm.DecodeError as err:
    ...     print(err)
    no metadata objects found in stream
    """


class MetadataNotFoundError(DRAMetadataError, FileNotFoundError):
    """A metadata file, or every metadata file of a request, is absent.

    Usually means "not yet" or "not allocated to this pod": the claim is not
    prepared, the request got no device from this driver, or the root is wrong.
    The message says what was looked for, what exists nearby and the likely fix;
    ``nearby`` holds the names offered instead (closest match first), ``path``
    the deepest path looked at.
    """

    #: The names offered instead, closest match first (empty when nothing is near).
    nearby: tuple[str, ...]

    def __init__(
        self, message: str, *, path: str | None = None, nearby: tuple[str, ...] = ()
    ) -> None:
        DRAMetadataError.__init__(self, message, path=path)
        self.filename = path
        self.nearby = nearby

    def __str__(self) -> str:
        return str(self.args[0])


class NotMountedError(MetadataNotFoundError):
    """Metadata that is not mounted in this container, and so never will be.

    Inside a container every metadata file is a single-file bind mount made when
    the container was created (``/proc/self/mountinfo`` lists them); a claim or
    request missing then cannot appear later. ``wait_for()`` raises this at once
    instead of waiting.
    """


class StaleMetadataError(DRAMetadataError):
    """A mounted metadata file whose node copy was replaced: it can never change again.

    The bind mount pins the inode the container started with (``st_nlink`` is 0
    once the node's writer renamed a new file over it). ``wait_for()`` raises
    this at once when what it waits for has not happened in such a file.
    """


class InvalidNameError(DRAMetadataError, ValueError):
    """A claim, request or driver name that would not stay inside its directory."""


class FileTooLargeError(DRAMetadataError, ValueError):
    """A metadata file larger than the size cap; it was not read."""


class SymlinkError(DRAMetadataError):
    """A symbolic link where the layout has a directory or a metadata file; not followed."""


class EnvError(DRAMetadataError, ValueError):
    """Metadata that cannot become environment variables as asked.

    Two sources (claims, requests or attributes) map to the same variable name,
    or a value holds a NUL character, which no environment variable can hold.
    The message names the variable and both sources.
    """


class AttributeNotFoundError(DRAMetadataError, LookupError):
    """A device has no attribute of the name asked for (:meth:`~dra_metadata.Device.require`).

    The message names the device and the attribute, and the closest names the
    device has ("did you mean"); ``name`` is the name asked for.
    """

    #: The attribute name asked for.
    name: str

    def __init__(self, message: str, *, name: str, path: str | None = None) -> None:
        super().__init__(message, path=path)
        self.name = name


class MalformedAttributeError(DRAMetadataError, ValueError):
    """A standard attribute holding what the standard does not define, asked for its meaning.

    ``pciBusID`` that is no PCI address, ``pcieRoot`` that is no ``pci<domain>:<bus>``,
    a ``numaNode`` that is a string or a bool: ``get``, ``env`` and ``require()``
    refuse it with this one message (naming the device and the attribute); ``show``
    and ``--format go`` print the value as written.
    """


class PublishError(DRAMetadataError):
    """:class:`~dra_metadata.MetadataPublisher` could not do what it was asked.

    A file or directory could not be written or removed (the ``OSError`` is the
    ``__cause__``), the configured API versions are not ones the Go kubelet
    plugin accepts, the devices cannot become a file every reader accepts, or a
    link or another kind of file sits where the publisher's directory or file
    belongs. Nothing half-written is left behind. A name no Kubernetes object can
    have is refused with an error that is both this and :class:`InvalidNameError`;
    an update of a request that is not prepared raises :class:`MetadataNotFoundError`.

    >>> import dra_metadata as dm
    >>> try:
    ...     dm.MetadataPublisher("gpu.example.com", versions=[dm.V1ALPHA1])
    ... except dm.PublishError as err:
    ...     print(err)
    the latest metadata version is metadata.resource.k8s.io/v1beta1 and must be enabled explicitly
    """


def os_reason(err: OSError) -> str:
    """The reason of an ``OSError`` in Go's words: ``no such file or directory``.

    >>> os_reason(FileNotFoundError(2, "No such file or directory"))
    'no such file or directory'
    """
    if err.errno is not None:
        return os.strerror(err.errno).lower()
    return str(err)
