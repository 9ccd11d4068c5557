"""What the job scripts print: ``instance I: WHAT VALUE`` lines, and digests of arrays to compare."""
import hashlib

import numpy as np

import popdist


def say(what: str, value) -> None:
    print(f"instance {popdist.getInstanceIndex()}: {what} {value}", flush=True)


def digest(arrays) -> str:
    sha = hashlib.sha256()
    for array in arrays:
        sha.update(np.ascontiguousarray(array).tobytes())
    return sha.hexdigest()[:16]
