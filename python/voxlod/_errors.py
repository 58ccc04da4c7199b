# SPDX-License-Identifier: Apache-2.0
"""Exceptions raised by voxlod: one class per library status, all subclasses of voxlod.Error.

Each carries the library's one-line message (what failed, why, and the library source location)
and the status (``.status``: the name, ``.code``: the number of include/voxlod/base.h's
vx_status). Where a built-in exception means the same, the class derives from it too, so
``except OSError``-style code keeps working (FileError is an OSError, InvalidArgumentError a
ValueError, NoMemoryError a MemoryError). No name shadows a Python built-in."""


class Error(Exception):
    """A failure reported by libvoxlod."""

    code = -1
    status = "error"

    def __init__(self, message: str, code: int = -1):
        super().__init__(message)
        self.message = message
        if code >= 0:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    code, status = 1, "invalid argument"


class FileError(Error, OSError):
    """A file could not be opened, read or written (VX_ERR_IO)."""

    code, status = 2, "I/O error"


class NoMemoryError(Error, MemoryError):
    code, status = 3, "out of memory"


class FormatError(Error):
    code, status = 4, "unknown format"


class CorruptError(Error):
    code, status = 5, "corrupt file"


class VersionError(Error):
    code, status = 6, "newer format version"


class EmptyError(Error):
    code, status = 7, "nothing to do"


class LimitError(Error):
    code, status = 8, "over a limit"


class CudaError(Error):
    code, status = 9, "CUDA error"


class NoGpuError(Error):
    code, status = 10, "no usable GPU"


class CancelledError(Error):
    """The call was cancelled by its progress callback (VX_ERR_INTERRUPTED)."""

    code, status = 11, "interrupted"


_BY_CODE = {c.code: c for c in (InvalidArgumentError, FileError, NoMemoryError, FormatError,
                                CorruptError, VersionError, EmptyError, LimitError, CudaError,
                                NoGpuError, CancelledError)}


def _make_error(code: int, message: str) -> Error:
    """The exception for a library status (called by the extension module)."""
    cls = _BY_CODE.get(code, Error)
    return cls(message, code)
