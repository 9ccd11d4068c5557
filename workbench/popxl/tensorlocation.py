"""popxl.tensorlocation: where tensors live (tile memory or Streaming Memory) and on which tiles."""
from enum import Enum

__all__ = ["TensorStorage", "ReplicatedTensorSharding", "TensorLocation", "TileSet", "ExecutionContext"]


class TensorStorage(Enum):
    """Keep a tensor on chip (tile memory) or off chip (Streaming Memory)."""

    OnChip = "OnChip"
    OffChip = "OffChip"


class ReplicatedTensorSharding(Enum):
    """Whether a tensor is split into one shard per replica."""

    On = "On"
    Off = "Off"


class TileSet(Enum):
    """The tiles an op runs on: compute tiles, IO tiles (``popxl.io_tiles()``), or not yet decided."""

    Compute = "Compute"
    IO = "IO"
    Undefined = "Undefined"


class ExecutionContext(Enum):
    """The part of a program an op belongs to."""

    Normal = "Normal"
    AccumulateOuterFragment = "AccumulateOuterFragment"
    WeightsFromHostFragment = "WeightsFromHostFragment"
    WeightsToHostFragment = "WeightsToHostFragment"
    OptimizerFromHostFragment = "OptimizerFromHostFragment"
    Subgraph = "Subgraph"


class TensorLocation:
    """Memory characteristics of a tensor: its storage and whether it is sharded over replicas."""

    def __init__(self, storage: TensorStorage = TensorStorage.OnChip,
                 replicated_tensor_sharding: ReplicatedTensorSharding = ReplicatedTensorSharding.Off) -> None:
        if not isinstance(storage, TensorStorage):
            raise TypeError(f"storage must be a TensorStorage, got {storage!r}")
        if not isinstance(replicated_tensor_sharding, ReplicatedTensorSharding):
            raise TypeError(f"replicated_tensor_sharding must be a ReplicatedTensorSharding, got "
                            f"{replicated_tensor_sharding!r}")
        self._storage = storage
        self._replicated_tensor_sharding = replicated_tensor_sharding

    @property
    def storage(self) -> TensorStorage:
        return self._storage

    @property
    def replicated_tensor_sharding(self) -> ReplicatedTensorSharding:
        return self._replicated_tensor_sharding

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorLocation) and other._storage is self._storage
                and other._replicated_tensor_sharding is self._replicated_tensor_sharding)

    def __hash__(self) -> int:
        return hash((self._storage, self._replicated_tensor_sharding))

    def __repr__(self) -> str:
        return (f"TensorLocation(storage={self._storage}, "
                f"replicated_tensor_sharding={self._replicated_tensor_sharding})")
