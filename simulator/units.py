"""Units, defined once: binary byte multiples (torch's ``bucket_cap_mb`` is MiB, ``_BucketCapacityConfig``)
and the decimal ones of bandwidths (nccl-tests' GB/s is 1e9 bytes per second)."""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
TIB = 1024 * GIB

KB = 1000
MB = 1000 * KB
GB = 1000 * MB
