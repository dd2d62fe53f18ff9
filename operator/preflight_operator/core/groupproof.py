"""Per multi-node group: the verdict, with every member the leader counted proven (pure).

Why: the group phase's leader (preflight_check/groupnet.py) counts whoever connects to its
port and says "I am member i of group G". Anyone who can reach the leader's pod address
could say it first with good facts; the leader then reported "all members joined and
agree" while the real member failed its own checks (ECC) or never came, and the
GPUValidation showed the leader's pass as the group's (issue 36, item 1).

The checker cannot tell a member from an impostor (it has no API credentials, by design).
The operator can: it trusts only the API server. So the leader lists every member it
counted as ``index/uid/address``: the uid the member presented (its downward-API
PREFLIGHT_POD_UID) and the address the leader's socket saw it connect from, which the
member cannot choose. Here each entry is matched against the pods of this workload the
operator itself resolved (owner chain and labels: core/workloads.py, runtime/ownership.py)
and recorded with their API-server status:

* a pod of this workload has that uid;
* its ``status.podIP`` is the address the leader saw;
* its own report (its own termination message) puts it in the same group at that index;
* it was created by the workload's controller whenever the leader's pod was (a pod anyone
  else made is shown but never vouches for a controller's group: core/provenance.py).

A member that matches nothing is named in ``unmatched`` and the group is not a pass. The
group's verdict also combines every member's *own* report, as its own pod status says:
the worst of the leader's group verdict and each member's own verdict, so a member whose
own checks failed (ECC) is never overridden by a leader's pass. docs/CHECKS.md, "Who is a
member", has the threat model.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from preflight_contract.verdicts import PASS, VERDICTS, WARN, rank, worst
from preflight_operator.core import provenance

MAX_GROUPS = 16
MAX_UNMATCHED = 8  # the GPUValidation's runtime.groups[].unmatched maxItems
_TEXT = 300
# All groups' ``unmatched`` texts together: 16 groups x 8 x 300 characters would be 38 KB,
# more than the whole status may be (gpuvalidation.STATUS_LIMIT, 32 KiB). Past this, each
# group keeps its first reason and counts the rest.
UNMATCHED_BUDGET = 8 * 1024


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "\u2026"


def _address(text: Any) -> str:
    """An address in canonical form (an IPv4-mapped IPv6 address as its IPv4), or ""."""
    if not isinstance(text, str) or not 0 < len(text) <= 45:
        return ""
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return ""
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return str(found.ipv4_mapped)
    return str(found)


def _roster(raw: Any) -> list[tuple[int, str, str]]:
    """(index, uid, address) of each member the leader listed ("" for "?")."""
    out: list[tuple[int, str, str]] = []
    for item in raw if isinstance(raw, list) else []:
        parts = item.split("/") if isinstance(item, str) else []
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        uid = "" if parts[1] == "?" else parts[1]
        out.append((int(parts[0]), uid, "" if parts[2] == "?" else parts[2]))
    return out


def _member_problem(
    gid: str,
    claim: tuple[int, str, str],
    pods: Mapping[str, Mapping[str, Any]],
    *,
    leader_trusted: bool,
) -> str:
    """Why the counted member ``claim`` (index, uid, address) is not a proven pod of group
    ``gid`` ("" when it is)."""
    index, uid, address = claim
    said = f"member {index} (uid {uid or 'none presented'}, connected from {address or '?'})"
    if not uid:
        return f"{said}: presented no pod uid (a checker older than this operator?)"
    pod = pods.get(uid)
    if pod is None:
        return (
            f"{said}: no pod of this workload with that uid has reported (not a member of "
            "this group, or its check has not finished)"
        )
    name = str(pod.get("pod", ""))
    own_ip = _address(pod.get("podIP"))
    extra = pod.get("podIPs")
    owned = {own_ip, *(_address(a) for a in (extra if isinstance(extra, list) else [])[:2])}
    owned.discard("")
    if _address(address) not in owned:
        return f"{said}: pod {name}'s IP is {own_ip or 'unknown'}, not the address the leader saw"
    if leader_trusted and pod.get("createdBy") != provenance.CONTROLLER:
        return f"{said}: pod {name} was not created by the workload's controller"
    group = pod.get("group")
    if not isinstance(group, Mapping) or str(group.get("id", "")) != gid:
        other = group.get("id") if isinstance(group, Mapping) else None
        return f"{said}: pod {name} reports group {other!r}, not {gid!r}"
    if group.get("index") != index:
        return f"{said}: pod {name} reports index {group.get('index')!r}"
    return ""


def _prove(
    out: dict[str, Any],
    leader: Mapping[str, Any],
    pods: Mapping[str, Mapping[str, Any]],
    members: Sequence[Mapping[str, Any]],
) -> None:
    """Match the leader's roster and combine the members' own verdicts into ``out``."""
    gid = str(out["group"])
    group = leader.get("group") or {}
    roster = _roster(group.get("members"))
    trusted = leader.get("createdBy") == provenance.CONTROLLER
    unmatched: list[str] = []
    proven: set[str] = set()
    for index, uid, address in roster:
        problem = _member_problem(gid, (index, uid, address), pods, leader_trusted=trusted)
        if problem:
            unmatched.append(_cut(problem))
        else:
            proven.add(uid)
    joined = group.get("joined")
    counted = joined - 1 if isinstance(joined, int) else len(roster)
    if "members" not in group and counted > 0:
        unmatched.append(
            "the leader's report lists no members (a checker older than this operator, or "
            "the report was cut to its last resort): membership not proven"
        )
    elif counted > len(roster):
        unmatched.append(
            f"{counted - len(roster)} counted member(s) not listed in the leader's report "
            "(it lists at most 16): membership not proven"
        )
    # a trusted leader's group is judged on trusted members only (provenance.py: a pod
    # anyone else made is shown but never outranks the controller's)
    counting = [m for m in members if not trusted or m.get("createdBy") == provenance.CONTROLLER]
    listed = {uid for _, uid, _ in roster}
    for member in counting:
        if str(member.get("uid", "")) not in listed:  # displaced, or the leader never saw it
            where = (member.get("group") or {}).get("index")
            unmatched.append(
                _cut(
                    f"pod {member.get('pod', '')} (member {where}) reports this group, but the "
                    "leader did not count it"
                )
            )
    out["membersProven"] = len(proven)
    if unmatched:
        out["unmatched"] = unmatched[:MAX_UNMATCHED]
    leader_verdict = str(group.get("verdict", ""))
    out["leaderVerdict"] = leader_verdict
    # every member's own verdict, as its own pod status says (proven or not: a member of
    # this group whose own checks failed fails the group whoever the leader counted)
    own = [str(m.get("verdict", "")) for m in [leader, *counting]]
    verdicts = [v for v in [leader_verdict, *own] if v in VERDICTS]
    combined = worst(verdicts) if verdicts else leader_verdict
    if unmatched and combined in (PASS, WARN, ""):
        combined = WARN
    out["verdict"] = combined


def _view(
    out: dict[str, Any], group: Mapping[str, Any], *, leader: bool, leader_seen: bool
) -> None:
    """Add one pod's view of its group to ``out``: the leader's, else the worst so far."""
    out["podsReported"] += 1
    if isinstance(group.get("size"), int):
        out["size"] = group["size"]
    verdict = str(group.get("verdict", ""))
    shown = str(out.get("verdict", ""))
    worse = verdict in VERDICTS and (shown not in VERDICTS or rank(verdict) > rank(shown))
    if leader or (not leader_seen and worse):
        for key in ("verdict", "joined", "missing", "slowestMember", "slowestLocalMs"):
            if key in group:
                out["membersJoined" if key == "joined" else key] = group[key]
    for key in ("busBandwidthGBps", "transport"):  # transport: issue 26
        if key in group and (leader or key not in out):
            out[key] = group[key]


def _leaders(entries: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Per group id, the entry whose view is the group's: the newest run of a pod at index
    0 that the workload's controller made, else the newest at index 0 (a pod anyone else
    made, claiming to lead, never shadows the controller's leader: provenance.py)."""
    out: dict[str, Mapping[str, Any]] = {}
    seen: set[str] = set()
    for entry in entries:
        group = entry.get("group")
        pod = str(entry.get("pod", ""))
        if not isinstance(group, Mapping) or not group.get("id") or pod in seen:
            continue
        seen.add(pod)
        gid = str(group["id"])
        if group.get("index") != 0:
            continue
        held = out.get(gid)
        trusted = entry.get("createdBy") == provenance.CONTROLLER
        if held is None or (trusted and held.get("createdBy") != provenance.CONTROLLER):
            out[gid] = entry
    return out


def group_results(
    history: Sequence[Mapping[str, Any]], live: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Per multi-node group (a LeaderWorkerSet replica, a JobSet): members joined, the
    verdict, the slowest member and the deep tier's bus bandwidth, from the newest run of
    each pod. ``live`` are the current pods' entries (PodResult.to_status), matched with the
    recorded ones (``history``, bounded) so that a member is found while its pod exists.

    With the leader's report (index 0), its view is the group's, combined with the members'
    own verdicts and its roster proven (``_prove``); without it, the worst verdict a member
    reported (``leaderReported: false``)."""
    pods: dict[str, Mapping[str, Any]] = {}
    for entry in [*live, *history]:  # the live entry first: it is the newest
        uid = str(entry.get("uid", "")) if isinstance(entry, Mapping) else ""
        if uid and uid not in pods:
            pods[uid] = entry
    ordered = sorted(
        pods.values(),
        key=lambda e: (str(e.get("checkedAt", "")), str(e.get("pod", ""))),
        reverse=True,
    )
    chosen = _leaders([*history, *ordered])
    groups: dict[str, dict[str, Any]] = {}
    leaders: dict[str, Mapping[str, Any]] = {}
    members: dict[str, list[Mapping[str, Any]]] = {}
    seen: set[str] = set()
    for entry in [*history, *ordered]:  # history is newest first; live pods not in it after
        group = entry.get("group")
        pod = str(entry.get("pod", ""))
        if not isinstance(group, Mapping) or not group.get("id") or pod in seen:
            continue
        seen.add(pod)
        gid = str(group["id"])
        if gid not in groups and len(groups) >= MAX_GROUPS:
            continue
        out = groups.setdefault(gid, {"group": gid, "podsReported": 0})
        leader = chosen.get(gid) is entry
        if leader:
            leaders[gid] = entry
        else:
            members.setdefault(gid, []).append(entry)
        _view(out, group, leader=leader, leader_seen=gid in leaders)
    for gid, out in groups.items():
        if gid in leaders:
            _prove(out, leaders[gid], pods, members.get(gid, []))
        out["leaderReported"] = gid in leaders
    return _bounded(list(groups.values()))


def _bounded(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``groups`` with their ``unmatched`` reasons within UNMATCHED_BUDGET characters."""
    if sum(len(u) for g in groups for u in g.get("unmatched", [])) <= UNMATCHED_BUDGET:
        return groups
    for group in groups:
        reasons = group.get("unmatched") or []
        if len(reasons) > 1:
            group["unmatched"] = [reasons[0], f"{len(reasons) - 1} more reason(s) not listed"]
    return groups
