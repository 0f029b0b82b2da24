"""Profile a Dask cluster (the scheduler and every worker) with ebpfprof.

    python3 -m ebpfprof_dask --scheduler tcp://host:8786 -d 30 -o profiles/

    with ebpfprof_dask.profile(client, "profiles", gc_log=True):
        client.compute(...)

ebpfprof must be installed on every host of the cluster and able to profile
the Dask processes there: installed with `make install-caps` for the user
they run as, run as root, or through a command given as `command=` or in
EBPFPROF_DASK_COMMAND (e.g. "sudo -n /usr/local/bin/ebpfprof")."""
from .core import ClusterProfile, format_index, profile, profile_cluster, summarize_gc_log

__all__ = ["ClusterProfile", "profile", "profile_cluster", "summarize_gc_log", "format_index"]
