"""Group membership is proven, not claimed (issue 36, item 1), the operator's half: every
member the leader counted (index/uid/the address it connected from) is matched against the
pods of the workload as the API server has them; a member that matches nothing is named and
keeps the group from passing; the group's verdict combines every member's own report.
(test_check_group_impostor.py is the checker's half, over real sockets.)"""

from __future__ import annotations

from typing import Any

import pytest

from preflight_operator.core.groupproof import group_results
from preflight_operator.core.podresults import pod_ip, pod_ips

UID = [f"{i:08x}-aaaa-4bbb-8ccc-{i:012x}" for i in range(6)]
GID = "ns/lws-0"


def ip(index: int) -> str:
    return f"10.0.0.{10 + index}"


def member(
    index: int,
    verdict: str = "pass",
    *,
    group_verdict: str | None = None,
    created_by: str = "controller",
    **group: Any,
) -> dict[str, Any]:
    """A pod's GPUValidation entry (PodResult.to_status), its own report's group summary."""
    summary = {"id": GID, "index": index, "size": 3, "verdict": group_verdict or verdict}
    summary.update(group)
    return {
        "pod": "lws-0" if index == 0 else f"lws-0-{index}",
        "uid": UID[index],
        "podIP": ip(index),
        "createdBy": created_by,
        "verdict": verdict,
        "checkedAt": "2026-12-06T05:00:00Z",
        "group": summary,
    }


def leader(*roster: str, verdict: str = "pass", joined: int = 3, **extra: Any) -> dict[str, Any]:
    return member(0, verdict, joined=joined, members=list(roster), **extra)


def honest_roster() -> list[str]:
    return [f"1/{UID[1]}/{ip(1)}", f"2/{UID[2]}/{ip(2)}"]


def only(history: list[dict[str, Any]], live: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    groups = [g for g in group_results(history, live or []) if g["group"] == GID]
    assert len(groups) == 1
    return groups[0]


def test_a_group_whose_every_member_is_proven_passes() -> None:
    group = only([leader(*honest_roster()), member(1), member(2)])
    assert (group["verdict"], group["membersProven"], group["leaderReported"]) == ("pass", 2, True)
    assert "unmatched" not in group


def test_an_impostor_with_a_real_members_uid_but_its_own_address_is_named() -> None:
    roster = [f"1/{UID[1]}/10.9.9.9", f"2/{UID[2]}/{ip(2)}"]  # it connected from 10.9.9.9
    group = only([leader(*roster), member(1), member(2)])
    assert group["leaderVerdict"] == "pass"
    assert group["verdict"] == "warn"  # never a pass
    assert group["membersProven"] == 1
    assert group["unmatched"] == [
        f"member 1 (uid {UID[1]}, connected from 10.9.9.9): pod lws-0-1's IP is {ip(1)}, "
        "not the address the leader saw"
    ]


def test_a_members_own_failure_is_never_overridden_by_the_leaders_pass() -> None:
    # the impostor took index 1; the real member 1 failed ECC and never got in
    roster = [f"1/{UID[1]}/10.9.9.9", f"2/{UID[2]}/{ip(2)}"]
    real = member(1, "fail", group_verdict="fail", joined=1)
    group = only([leader(*roster), real, member(2)])
    assert group["verdict"] == "fail"
    # and even with every member proven, a member's own failure fails the group
    group = only([leader(*honest_roster()), member(1, "fail", group_verdict="pass"), member(2)])
    assert (group["verdict"], group["leaderVerdict"]) == ("fail", "pass")


@pytest.mark.parametrize(
    ("roster_entry", "pods", "why"),
    [
        (f"1/{UID[5]}/{ip(1)}", [member(2)], "no pod of this workload with that uid"),
        ("1/?/10.0.0.11", [member(1), member(2)], "presented no pod uid"),
        (f"1/{UID[1]}/?", [member(1), member(2)], "not the address the leader saw"),
        (f"1/{UID[2]}/{ip(2)}", [member(2)], "pod lws-0-2 reports index 2"),
        (
            f"1/{UID[1]}/{ip(1)}",
            [{**member(1), "group": {**member(1)["group"], "id": "ns/lws-1"}}, member(2)],
            "reports group 'ns/lws-1', not 'ns/lws-0'",
        ),
        (
            f"1/{UID[1]}/{ip(1)}",
            [member(1, created_by="other"), member(2)],
            "was not created by the workload's controller",
        ),
    ],
)
def test_each_way_a_counted_member_fails_to_match_is_named(
    roster_entry: str, pods: list[dict[str, Any]], why: str
) -> None:
    group = only([leader(roster_entry, f"2/{UID[2]}/{ip(2)}"), *pods])
    assert group["verdict"] != "pass"
    assert any(why in u for u in group["unmatched"]), group["unmatched"]
    assert all(len(u) <= 300 for u in group["unmatched"])


def test_a_real_member_the_leader_did_not_count_is_named() -> None:
    # a stranger's uid under index 1; the real member 1 reports this group
    group = only([leader(f"1/{UID[5]}/10.9.9.9", f"2/{UID[2]}/{ip(2)}"), member(1), member(2)])
    assert any(
        "pod lws-0-1 (member 1) reports this group, but the leader did not count it" in u
        for u in group["unmatched"]
    )


def test_a_roster_that_is_absent_or_short_proves_nothing_past_it() -> None:
    older = member(0, "pass", joined=3)  # a checker before the roster
    group = only([older, member(1), member(2)])
    assert group["verdict"] == "warn"
    assert "lists no members" in group["unmatched"][0]
    group = only([leader(f"1/{UID[1]}/{ip(1)}"), member(1), member(2)])
    assert any("1 counted member(s) not listed" in u for u in group["unmatched"])


def test_a_member_out_of_the_recorded_history_is_found_among_the_live_pods() -> None:
    # the status keeps only the newest pod entries; a live pod still proves its membership
    group = only([leader(*honest_roster()), member(1)], live=[member(2)])
    assert (group["verdict"], group["membersProven"]) == ("pass", 2)


def test_a_lone_tenant_pod_does_not_fail_a_controllers_group() -> None:
    stranger = {**member(1, "fail"), "uid": UID[4], "pod": "tenant", "createdBy": "other"}
    group = only([leader(*honest_roster()), member(1), member(2), stranger])
    assert group["verdict"] == "pass"


def test_the_pods_address_is_the_api_servers_canonical_form() -> None:
    assert pod_ip({"status": {"podIP": "10.0.0.1"}}) == "10.0.0.1"
    assert pod_ip({"status": {"podIP": "fd00:0::1"}}) == "fd00::1"
    assert pod_ip({"status": {"podIP": "not an ip"}}) == ""
    assert pod_ip({"status": {"podIP": 7}}) == ""
    assert pod_ip({}) == ""
    # an IPv4-mapped address the leader's dual-stack socket saw matches the IPv4 podIP
    mapped = leader(f"1/{UID[1]}/::ffff:{ip(1)}", f"2/{UID[2]}/{ip(2)}")
    group = only([mapped, member(1), member(2)])
    assert group["membersProven"] == 2


def test_a_pod_anyone_made_claiming_to_lead_never_shadows_the_controllers_leader() -> None:
    forged = {
        **leader(f"1/{UID[1]}/{ip(1)}", f"2/{UID[2]}/{ip(2)}"),
        "pod": "forged",
        "uid": UID[5],
        "createdBy": "other",
        "checkedAt": "2026-12-06T06:00:00Z",  # newer than the real leader's
    }
    real = leader(f"1/{UID[1]}/10.9.9.9", f"2/{UID[2]}/{ip(2)}")
    group = only([forged, real, member(1), member(2)])
    assert group["verdict"] == "warn"  # the real leader's roster: member 1 unmatched
    assert group["membersProven"] == 1


def test_the_reasons_of_many_groups_stay_within_the_status_budget() -> None:
    history: list[dict[str, Any]] = []
    for g in range(16):
        roster = [f"{i}/{UID[5]}/10.9.{g}.{i}" for i in range(1, 9)]  # 8 strangers each
        entry = leader(*roster, joined=9)
        entry["group"] = {**entry["group"], "id": f"ns/lws-{g}", "size": 9}
        history.append({**entry, "pod": f"lws-{g}", "uid": f"{g:08x}-0000-4000-8000-{g:012x}"})
    groups = group_results(history)
    assert len(groups) == 16
    assert all(g["verdict"] == "warn" for g in groups)
    assert sum(len(u) for g in groups for u in g["unmatched"]) <= 8 * 1024
    assert groups[0]["unmatched"][1] == "7 more reason(s) not listed"


def test_a_dual_stack_member_matches_on_either_of_its_addresses() -> None:
    status = {"podIP": "fd00::b", "podIPs": [{"ip": "fd00::b"}, {"ip": ip(1)}, {"ip": "x"}]}
    assert pod_ips({"status": status}) == ("fd00::b", ip(1))
    assert pod_ips({"status": {"podIPs": [{"ip": ip(1)}]}}) == ()
    dual = {**member(1), "podIP": "fd00::b", "podIPs": ["fd00::b", ip(1)]}
    group = only([leader(*honest_roster()), dual, member(2)])
    assert (group["verdict"], group["membersProven"]) == ("pass", 2)
