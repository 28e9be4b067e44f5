"""backfill: place best-effort pods (no requests) that allocate left pending, gang-aware."""

from __future__ import annotations

from scheduler.actions.predicate_cache import PredicateErrorCache
from scheduler.api.subgroups import subgroup_key
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


class Backfill(Action[PredicateErrorCache]):
    """Best-effort pods take no resources, so queue shares do not hold them back; a gang of
    them still commits only when ready, and a member of a subgroup is left to allocate,
    which places subgroups whole."""

    name = "backfill"

    def execute(self, session: Session, state: CycleState) -> None:
        picker = NodePicker(session, state)
        jobs = session.active_jobs.values()
        for job in sorted(jobs, key=lambda j: (j.creation_timestamp, j.key)):
            pending = [task for task in job.pending_tasks() if task.best_effort]
            if job.subgroup_policies:
                # Subgroups are placed whole by allocate; a member left over is not alone.
                policies = job.subgroup_policies
                pending = [t for t in pending if subgroup_key(policies, t.labels) is None]
            if not pending or session.job_valid(job) is not None:
                continue
            statement = Statement(session)
            for task in session.sorted_tasks(pending):
                node = picker.pick(task)
                if node is None:
                    job.fit_errors[task.uid] = picker.failure(task)
                    break
                statement.allocate(task, node)
                picker.reconsider(task, node)
            if session.job_ready(job):
                statement.commit()
            else:
                picker.discard(statement)
