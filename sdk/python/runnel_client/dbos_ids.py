"""Where Runnel and a DBOS workflow meet: the one mapping both ends use (ADR 0043).

Kept free of any DBOS import, so the server's wait service and workflow code share it.
"""

from __future__ import annotations


def workflow_id_for(tenant: str, run_id: str) -> str:
    """The DBOS workflow id that receives the input records of run `run_id` of `tenant`.

    `/` is outside the id alphabet of tenants and runs, so the mapping is injective: the same
    run id in two tenants (two runs) never reaches the same workflow. Start the workflow under
    this id (`SetWorkflowID(workflow_id_for(tenant, run_id))`) before, or soon after, the
    first input record; until it exists a delivery fails and is retried with backoff."""
    return f"{tenant}/{run_id}"


def run_of(workflow_id: str) -> tuple[str, str]:
    """The inverse of `workflow_id_for`: `(tenant, run_id)`; raises ValueError for an id that
    no run maps to."""
    tenant, slash, run_id = workflow_id.partition("/")
    if not slash or not tenant or not run_id or "/" in run_id:
        raise ValueError(f"{workflow_id!r} is not a Runnel run's workflow id (tenant/run_id)")
    return tenant, run_id
