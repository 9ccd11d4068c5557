"""Jobs of several instances (processes): the MPI link and the collectives that span instances."""
