"""popxl.replica_grouping."""
from workbench.ir.replica_grouping import ReplicaGrouping
