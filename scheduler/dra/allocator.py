"""Joint device allocation: the devices of every claim of a gang's members, chosen together.

A gang's pods are placed one at a time inside one Statement; their claims are allocated
with them, tentatively, and a later member may have the devices of the gang's earlier
claims re-assigned to make room for its own (kube-scheduler never does, so a gang can fail
where an assignment exists: kubernetes#138765). `DeviceAllocator.fits(pod, node, gang)`:

1. **Claims allocated already** (on the API server, or committed earlier in the session)
   are reused as they are: the node must be one their node selector allows ("resourceclaim
   not available on the node"). A claim the gang took tentatively for an earlier member is
   reused if its devices reach this node; otherwise it is allocated again, from devices
   every node of its pods reaches (none node-local, then). A claim another gang is
   allocating makes the pod wait until that gang commits or gives it back, as
   kube-scheduler answers for a claim whose allocation is in flight.
2. **The quick answer**: the pod's other claims alone, from the devices free now (held by
   no claim, tentative or allocated), in kube-scheduler's order: claims as the pod lists
   them, requests as the claim does, devices first fit in dra/inventory.py's order, so a
   pod alone gets the devices kube-scheduler would give it. One claim with one request of
   identical devices is a walk over the free ones (dra/search.py, matching). **Counted**
   first, for a pod with a lane (dra/pods.py: every request asks a count of one shape's
   interchangeable candidates) whose claims none allocated or took yet, while no device is
   promised by an eviction: it fits when that many candidates on the node are free, the
   first of which are what the matching gives and what `take` gives (no Search, no
   units); the matching's steps are counted all the same. A no, or anything else, goes
   to the search for its words and the joint answer.
3. **The joint answer**, only when the quick one is no and some of the gang's tentative
   claims hold devices in the pools the pod's requests draw from: those claims, and
   transitively the gang's claims holding devices in their pools, are searched again with
   the pod's, each on the nodes of its pods, the most constrained request first
   (dra/search.py: matching when it can, else backtracking). A search counts every device
   it tries and gives up after `step_limit` steps, or when the session has spent
   `session_steps`; the failure says so.

`take(pod, node, gang)` applies what `fits` found. `give_back(pod)` undoes it exactly when
it is the newest take (a Statement discards newest first): the claims it allocated let go
of their devices and those it re-assigned get their previous ones back; an older take
given back only lets go of its claims. `commit(gang)` makes the gang's claims allocated
for the rest of the session and returns each one's AllocationResult (dra/results.py).
`freed_by`, `release` and `unrelease` are preemption's: a claim frees its devices when
no pod that stays uses it.

A failure says it in kube-scheduler's words ("cannot allocate all claims") and then in
muster's: which claim, which request, which class, how many devices match its selectors
on the node and how many of those are free, and the devices muster does not allocate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet

from scheduler.api import dra, wire
from scheduler.dra.allocation import Allocation, allocation_held, allows, first_free
from scheduler.dra.candidates import Candidates
from scheduler.dra.cel import SelectorMemo
from scheduler.dra.fit import FITS, FITS_LATER, NOT_AVAILABLE, DeviceFit, PodProblem, Verdict
from scheduler.dra.holdings import Holdings
from scheduler.dra.inventory import Device, DeviceId, Inventory
from scheduler.dra.kept import DeviceMemo
from scheduler.dra.pods import PodEntry, PodIndex
from scheduler.dra.records import NOTHING, Plan, Take, Tentative
from scheduler.dra.requests import Claim, PodClaims, claim_from_wire, claim_set
from scheduler.dra.results import allocation_result
from scheduler.dra.search import Exhausted, Job, Search, Unit
from scheduler.dra.shortage import SearchFailure, failure_fit

DEFAULT_STEP_LIMIT = 20_000
DEFAULT_SESSION_STEPS = 1_000_000
# The answers kept between two changes of the state (see _plan).
_PLANS_KEPT = 4096
# A node whose candidates a lane has not asked for yet.
_UNKNOWN: list[Device] = []


class DeviceAllocator:
    """The devices of one session: who holds what, and the claims gangs take tentatively.

    Built from the cache's decoded DeviceClasses, ResourceSlices and ResourceClaims, the
    nodes' labels by name, the namespaces' labels by name (for admin access; None: as the
    API server admitted the claims) and a selector memo the cache keeps across sessions.
    `counting=False` has the search answer every question (the module docstring)."""

    def __init__(
        self,
        classes: Iterable[dra.DeviceClass],
        slices: Iterable[dra.ResourceSlice],
        claims: Iterable[dra.ResourceClaim],
        nodes: Mapping[str, Mapping[str, str]],
        *,
        memo: SelectorMemo | None = None,
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
        step_limit: int = DEFAULT_STEP_LIMIT,
        session_steps: int = DEFAULT_SESSION_STEPS,
        stale: Mapping[str, str] | None = None,
        counting: bool = True,
    ) -> None:
        self.memo = memo if memo is not None else SelectorMemo()
        # A DeviceMemo keeps the decoded inventory and claims across sessions (dra/kept.py).
        kept = self.memo if isinstance(self.memo, DeviceMemo) else None
        self.inventory = (
            kept.inventory(list(slices), nodes) if kept is not None else Inventory(slices, nodes)
        )
        self.memo.keep_only(self.inventory.slice_keys)
        listed = list(classes)
        self.classes = {item.metadata.name: item for item in listed}
        store = kept.candidates(listed) if kept is not None else None
        self.candidates = Candidates(
            self.inventory,
            self.classes,
            self.memo,
            store.found if store is not None else None,
            store.counted if store is not None else None,
        )
        self.holdings = Holdings(self.inventory)
        self.step_limit = step_limit
        # Whether a counted answer may stand for the search's (False: every answer is the
        # search's, for tests that compare the two).
        self.counting = counting
        self.steps_left = session_steps
        # Claims allocated for the rest of the session: on the API server, or committed.
        self._allocated: dict[str, dra.AllocationResult] = {}
        self._tentative: dict[str, Tentative] = {}
        # Who uses each claim: its reservedFor, and the pods taken since.
        self._users: dict[str, set[str]] = {}
        self._takes: list[Take] = []
        self._released: dict[str, list[tuple[str, list[DeviceId]]]] = {}
        self._plans: dict[tuple[int, str, str], Plan] = {}
        self._last: tuple[PodClaims, str, str, Plan] | None = None
        self._version = 0
        # The node selector of each node an allocation is pinned to (dra/results.py).
        self._pinned: dict[str, wire.NodeSelector] = {}
        # Claims allocated on the API server for a pod that was never bound (its leader died,
        # or its bind failed, between the claim's write and the binding), by the gang of that
        # pod: the gang reuses one as it is where its pod lands within reach, or allocates it
        # again elsewhere (the binder then clears the old allocation first); no other gang
        # may take its devices meanwhile.
        self.stale: dict[str, str] = dict(stale or {})
        # Devices freed by pods leaving (`release`): a pod may be promised them (pipelined),
        # never bound to them while their claims still hold them on the API server.
        self._future: set[DeviceId] = set()
        decoded = (
            kept.claims(list(claims), namespaces)
            if kept is not None
            else claim_set(
                [
                    claim_from_wire(
                        obj,
                        None if namespaces is None else namespaces.get(obj.metadata.namespace, {}),
                    )
                    for obj in claims
                ]
            )
        )
        self.claims = decoded.by_key
        self.refusals = decoded.refusals  # whether any claim has a field muster refuses
        self._pods = PodIndex(
            self.claims, self.classes, self.candidates, store.pods if store is not None else None
        )
        for claim in decoded.reserved:
            self._users[claim.key] = set(claim.reserved_for)
        for claim in decoded.allocated:
            assert claim.allocation is not None
            self._allocated[claim.key] = claim.allocation
            self.holdings.hold(claim.key, allocation_held(claim.allocation))

    # Placement ---------------------------------------------------------------------------

    def fits(self, pod: PodClaims, node: str, gang: str) -> DeviceFit:
        """Whether the pod's claims can be allocated for it on the node, given what the
        gang's earlier members took tentatively (which may be re-assigned) and what every
        other claim holds."""
        return self._plan(pod, node, gang).fit

    def later(self, pod: PodClaims, node: str, gang: str) -> bool:
        """Whether the pod fits the node only with devices pods leaving let go (`release`)."""
        return bool(self._future) and self.fits(pod, node, gang).later

    def take(self, pod: PodClaims, node: str, gang: str) -> None:
        """Allocate the pod's claims on the node, tentatively (`fits` must have said yes)."""
        if not self.take_if_fits(pod, node, gang):
            raise ValueError(f"pod {pod.key} does not fit on {node}: {self.fits(pod, node, gang)}")

    def take_if_fits(self, pod: PodClaims, node: str, gang: str) -> bool:
        """`take`, when `fits` says yes; whether it did."""
        plan = self._plan(pod, node, gang)
        if not plan.fit.fits:
            return False
        if plan.counted is not None:
            self._take_counted(pod, node, gang, *plan.counted)
        else:
            self._take_searched(pod, node, gang, plan)
        return True

    def _take_searched(self, pod: PodClaims, node: str, gang: str, plan: Plan) -> None:
        previous: dict[str, Allocation] = {}
        replaced: dict[str, dra.AllocationResult] = {}
        record = Take(pod, gang, [], previous, [], replaced)
        # Every re-assigned claim lets go first: another may take over what it held.
        for key in plan.allocations:
            tentative = self._tentative.get(key)
            if tentative is not None:
                previous[key] = tentative.allocation
                self.holdings.let_go(key)
            elif key in self._allocated:
                replaced[key] = self._allocated.pop(key)
                self.holdings.let_go(key)
        for key, allocation in plan.allocations.items():
            tentative = self._tentative.get(key)
            if tentative is None:
                record.allocated.append(key)
                self._tentative[key] = Tentative(gang, allocation)
            else:
                tentative.allocation = allocation
            self.holdings.hold(key, allocation.held)
        for key in pod.claims:
            users = self._users.setdefault(key, set())
            if pod.uid not in users:
                users.add(pod.uid)
                record.users_added.append(key)
            tentative = self._tentative.get(key)
            if tentative is not None:
                tentative.pods[pod.key] = node
        self._takes.append(record)
        self._changed()

    def _take_counted(
        self, pod: PodClaims, node: str, gang: str, claims: list[Claim], devices: list[Device]
    ) -> None:
        """`take` of a counted yes: each of the pod's claims, none allocated or taken, takes
        its first free candidates; nothing is re-assigned."""
        allocations = first_free(claims, devices, node)
        pod_key = pod.key
        record = Take(pod, gang, list(allocations), NOTHING, [], NOTHING)
        users = self._users
        uid = pod.uid
        for key, allocation in allocations.items():
            self._tentative[key] = Tentative(gang, allocation, {pod_key: node})
            self.holdings.hold_free(key, [pick.device.id for pick in allocation.picks])
            taken = users.get(key)
            if taken is None:
                users[key] = {uid}
            elif uid in taken:
                continue
            else:
                taken.add(uid)
            record.users_added.append(key)
        self._takes.append(record)
        self._changed()

    def give_back(self, pod: PodClaims) -> None:
        """Undo the pod's take: exactly when it is the newest (the module docstring)."""
        pod_key = pod.key
        position = next(
            (i for i in range(len(self._takes) - 1, -1, -1) if self._takes[i].pod.key == pod_key),
            None,
        )
        if position is None:
            return
        record = self._takes.pop(position)
        newest = position == len(self._takes)
        for key in record.users_added:
            self._users[key].discard(pod.uid)
        for key in pod.claims:
            tentative = self._tentative.get(key)
            if tentative is not None:
                tentative.pods.pop(pod.key, None)
        for key in record.allocated:
            tentative = self._tentative.get(key)
            if tentative is not None and not tentative.pods:
                self.holdings.let_go(key)
                del self._tentative[key]
                replaced = record.replaced.get(key)
                if replaced is not None:
                    self._allocated[key] = replaced
                    self.holdings.hold(key, allocation_held(replaced))
        if newest:
            restored = [key for key in record.previous if key in self._tentative]
            for key in restored:
                self.holdings.let_go(key)
            for key in restored:
                self._tentative[key].allocation = record.previous[key]
                self.holdings.hold(key, record.previous[key].held)
        self._changed()

    def commit(
        self, gang: str, pods: AbstractSet[str] | None = None
    ) -> dict[str, dra.AllocationResult]:
        """Make the gang's tentative claims allocated for the rest of the session (only those
        the pods `pods`, by key, use, when given); the AllocationResult of each, by claim
        key, for the binder to write."""
        results = self.tentative_results(gang, pods)
        for key in results:
            del self._tentative[key]
        self._allocated.update(results)
        self._takes = [
            take
            for take in self._takes
            if take.gang != gang or (pods is not None and take.pod.key not in pods)
        ]
        self._changed()
        return results

    def tentative_results(
        self, gang: str, pods: AbstractSet[str] | None = None
    ) -> dict[str, dra.AllocationResult]:
        """What `commit` would return now."""
        results: dict[str, dra.AllocationResult] = {}
        for key, tentative in self._tentative.items():
            if tentative.gang != gang or (pods is not None and pods.isdisjoint(tentative.pods)):
                continue
            allocation = tentative.allocation
            results[key] = allocation_result(
                self.claims[key],
                list(allocation.picks),
                allocation.node or next(iter(tentative.pods.values()), None),
                self.classes,
                self._pinned,
            )
        return results

    # Preemption --------------------------------------------------------------------------

    def freed_by(self, pods: Iterable[PodClaims]) -> frozenset[DeviceId]:
        """The devices evicting all these pods would free: those of the claims no other
        pod uses (a claim shared with a pod that stays frees nothing)."""
        leaving: dict[str, set[str]] = {}
        for pod in pods:
            for key in pod.claims:
                leaving.setdefault(key, set()).add(pod.uid)
        freed: set[DeviceId] = set()
        for key, uids in leaving.items():
            if self._users.get(key, set()) <= uids:
                freed.update(self.holdings.held_by(key))
        return frozenset(freed)

    def release(self, pod: PodClaims) -> None:
        """The pod is evicted (tentatively): its claims no other pod uses free their
        devices for the rest of the session, or until `unrelease`."""
        freed: list[tuple[str, list[DeviceId]]] = []
        for key in pod.claims:
            users = self._users.get(key)
            if users is None or pod.uid not in users:
                continue
            users.discard(pod.uid)
            devices = [] if users else self.holdings.let_go(key)
            self._future.update(devices)
            freed.append((key, devices))
        self._released[pod.key] = freed
        self._changed()

    def unrelease(self, pod: PodClaims) -> None:
        """Undo `release`."""
        for key, devices in self._released.pop(pod.key, []):
            self._users.setdefault(key, set()).add(pod.uid)
            self._future.difference_update(devices)
            self.holdings.hold(key, devices)
        self._changed()

    # Questions about a pod, not a node -----------------------------------------------------

    def pod_problem(self, pod: PodClaims, gang: str) -> DeviceFit | None:
        """Why the pod's claims cannot be allocated on any node now, before any node is
        asked (kube-scheduler's PreEnqueue and PreFilter reasons, and what muster refuses),
        or None."""
        entry = self._pods.entry(pod)
        lane = entry.lane
        if lane is not None:
            # No claim of it waits or is refused; only another gang's allocating one tells.
            for key in lane.keys:
                tentative = self._tentative.get(key)
                if tentative is not None and tentative.gang != gang:
                    return DeviceFit(
                        Verdict.POD,
                        f"resource claim {key} is in the process of being allocated",
                    )
            return None
        try:
            claims = self._claims_of(pod)
            for claim, no_class in zip(claims, entry.no_class, strict=True):
                if claim.key in self._allocated:
                    continue
                tentative = self._tentative.get(claim.key)
                if tentative is not None and tentative.gang != gang:
                    raise PodProblem(
                        Verdict.POD,
                        f"resource claim {claim.key} is in the process of being allocated",
                    )
                if no_class is not None:
                    raise PodProblem(Verdict.POD, no_class)
        except PodProblem as problem:
            return problem.fit
        return None

    def may_refuse(self, pod: PodClaims) -> bool:
        """Whether a claim of the pod has a field muster refuses (`pod_problem` names it)."""
        return self._pods.entry(pod).refusals

    def could_fit(self, pod: PodClaims, node: str) -> bool:
        """Whether the node has devices enough for the pod's claims were every device of it
        free (its claims allocated already must allow the node)."""
        labels = self.inventory.labels(node)
        try:
            for claim in self._claims_of(pod):
                allocated = self._allocated.get(claim.key)
                if allocated is not None:
                    if not allows(allocated.node_selector, node, labels):
                        return False
                    continue
                for unit in self.candidates.units(Job(claim, (node,))):
                    if not any(
                        len(devices) >= (len(devices) if choice.all_devices else choice.count)
                        and (devices or not choice.all_devices)
                        for choice, devices in unit.choices
                    ):
                        return False
        except PodProblem:
            return False
        return True

    # Deciding ---------------------------------------------------------------------------

    def _plan(self, pod: PodClaims, node: str, gang: str) -> Plan:
        # A yes is asked again at once (`later`, then its take): found without the entry.
        last = self._last
        if (
            last is not None
            and last[0] is pod
            and last[3].version == self._version
            and last[1] == node
            and last[2] == gang
        ):
            return last[3]
        entry = self._pods.entry(pod)
        cache_key = (entry.index, node, gang)
        plan = self._plans.get(cache_key)
        if plan is not None and plan.version == self._version:
            return plan
        try:
            plan = self._counted(entry, node) or self._decide(pod, node, gang)
        except PodProblem as problem:
            plan = Plan(self._version, problem.fit)
        # Only a yes is kept, for the take that follows it: a placement asks every node
        # once per pod, and keeping every no would keep pods times nodes answers.
        if plan.fit.fits:
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            self._plans[cache_key] = plan
            self._last = (pod, node, gang, plan)
        return plan

    def _counted(self, entry: PodEntry, node: str) -> Plan | None:
        """The counted yes (the module docstring), or None for the search to decide."""
        lane = entry.lane
        if lane is None or not self.counting or self._future:
            return None
        allocated, tentative = self._allocated, self._tentative
        for key in lane.keys:
            if key in allocated or key in tentative:
                return None
        devices = lane.nodes.get(node, _UNKNOWN)
        if devices is _UNKNOWN:
            try:
                devices = self.candidates.on_node(lane.nodes, entry.claims[0], node)
            except PodProblem:
                return None
        if devices is None or lane.steps > self._step_bound():
            return None
        free = self.holdings.first_free(devices, lane.need)
        if free is None:
            return None
        self.steps_left -= lane.steps
        return Plan(self._version, FITS, counted=(entry.claims, free))

    def _decide(self, pod: PodClaims, node: str, gang: str) -> Plan:
        labels = self.inventory.labels(node)
        jobs: list[Job] = []
        moving: set[str] = set()
        for claim in self._claims_of(pod):
            key = claim.key
            allocated = self._allocated.get(key)
            if allocated is not None:
                if allows(allocated.node_selector, node, labels):
                    continue
                if self.stale.get(key) != gang:
                    return self._not_here(f"claim {key} is allocated for other nodes")
                # Its stale allocation is the gang's to replace.
                jobs.append(Job(claim, (node,)))
                moving.add(key)
                continue
            tentative = self._tentative.get(key)
            if tentative is None:
                jobs.append(Job(claim, (node,)))
            elif tentative.gang != gang:
                # Another gang, not committed yet, is allocating it: kube-scheduler's
                # answer for a claim whose allocation is in flight.
                raise PodProblem(
                    Verdict.POD, f"resource claim {key} is in the process of being allocated"
                )
            elif not tentative.allocation.reaches(node, labels):
                jobs.append(Job(claim, tuple(sorted({*tentative.pods.values(), node}))))
                moving.add(key)
        if not jobs:
            return Plan(self._version, FITS)
        units = [unit for job in jobs for unit in self.candidates.units(job)]
        outcome = self._search(units, moving, joint=False)
        if isinstance(outcome, SearchFailure):
            competitors = self._competitors(units, gang, {job.claim.key for job in jobs})
            if competitors:
                joint = units + [u for job in competitors for u in self.candidates.units(job)]
                released = moving | {job.claim.key for job in competitors}
                outcome = self._search(joint, released, joint=True)
        if isinstance(outcome, SearchFailure):
            return Plan(
                self._version,
                failure_fit(outcome, units, node, self.holdings, self.inventory, self.steps_left),
            )
        future = self._future
        later = bool(future) and any(
            pick.device.id in future for found in outcome.values() for pick in found.picks
        )
        return Plan(self._version, FITS_LATER if later else FITS, outcome)

    def _step_bound(self) -> int:
        """The steps a question may spend: a search's bound, or what the session has left."""
        return min(self.step_limit, max(self.steps_left, 0))

    def _not_here(self, detail: str) -> Plan:
        return Plan(self._version, DeviceFit(Verdict.NODE, NOT_AVAILABLE, detail))

    def _claims_of(self, pod: PodClaims) -> list[Claim]:
        """The pod's claims; PodProblem for kube-scheduler's reasons a pod waits
        (PreEnqueue's), then for what muster refuses."""
        entry = self._pods.entry(pod)
        for claim in entry.claims:
            # Refused, unless allocated already (which changes as gangs commit).
            if claim.refusal is not None and claim.key not in self._allocated:
                raise PodProblem(Verdict.REFUSED, f"claim {claim.key}: {claim.refusal}")
        if entry.waiting is not None:
            raise PodProblem(entry.waiting.verdict, entry.waiting.reason)
        return entry.claims

    def _competitors(self, units: list[Unit], gang: str, searched: set[str]) -> list[Job]:
        """The gang's tentative claims holding devices in the pools these units draw
        from, and transitively those holding devices in their pools."""
        pools = {id(d.pool) for unit in units for _, devices in unit.choices for d in devices}
        found: list[Job] = []
        seen = set(searched)
        grew = True
        while grew:
            grew = False
            for key, tentative in self._tentative.items():
                if key in seen or tentative.gang != gang:
                    continue
                if not any(id(pick.device.pool) in pools for pick in tentative.allocation.picks):
                    continue
                seen.add(key)
                job = Job(self.claims[key], tuple(sorted(set(tentative.pods.values()))))
                found.append(job)
                for unit in self.candidates.units(job):
                    pools.update(id(d.pool) for _, devices in unit.choices for d in devices)
                grew = True
        return found

    def _search(
        self, units: list[Unit], released: set[str], *, joint: bool
    ) -> dict[str, Allocation] | SearchFailure:
        search = Search(self.holdings, units, released, self._step_bound())
        if joint:
            search.most_constrained_first()
        try:
            found = search.run()
        except Exhausted:
            return SearchFailure(exhausted=True, steps=search.steps)
        finally:
            self.steps_left -= search.steps
        if found is None:
            return SearchFailure(short=search.short, steps=search.steps)
        nodes = {unit.job.claim.key: unit.job.nodes for unit in units}
        return {
            key: Allocation(
                tuple(picks),
                nodes[key][0] if any(pick.device.node_bound for pick in picks) else None,
            )
            for key, picks in found.items()
        }

    def holder(self, device: DeviceId) -> str | None:
        """The claim holding the device now (allocated or tentatively), if any."""
        return self.holdings.holder(device)

    def state(self) -> tuple[object, ...]:
        """Everything a later question reads, comparable (tests of exact undo)."""
        return (
            self.holdings.state(),
            {k: (t.gang, _parts(t), dict(t.pods)) for k, t in sorted(self._tentative.items())},
            {k: set(v) for k, v in sorted(self._users.items()) if v},
        )

    def _changed(self) -> None:
        self._version += 1
        self._plans.clear()


def _parts(tentative: Tentative) -> tuple[object, ...]:
    """A claim's devices as `state` compares them: each pick's choice and device, the node."""
    allocation = tentative.allocation
    return tuple((pick.choice, pick.device.id) for pick in allocation.picks), allocation.node
