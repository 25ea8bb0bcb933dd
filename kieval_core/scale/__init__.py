"""Scale-out: evaluation partition by partition on a Dask cluster."""
