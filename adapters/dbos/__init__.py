"""The DBOS `WorkflowWaitService`: input records sent to the run's DBOS workflow."""

from adapters.dbos.wait_service import DbosWaitService

__all__ = ["DbosWaitService"]
