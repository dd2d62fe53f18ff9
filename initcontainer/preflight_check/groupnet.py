"""The group phase, socket part: the leader listens, members dial it (see ``group``).

Bounded by the deadline it is given: the leader stops waiting for members a little before
it (so that its verdict, naming who is missing, still reaches the members that came), and
a member gives up dialling at it. Strangers on the port are refused one by one without
stopping the wait; a member that comes late is taken until the leader's deadline. No
Kubernetes API: the leader's address is all a member needs.
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from preflight_check.group import (
    PROTOCOL,
    FrameReader,
    GroupConfig,
    GroupVerdict,
    ProtocolError,
    clean_facts,
    encode,
    hello,
    judge,
    member_outcome_unreachable,
    read_hello,
    read_verdict,
    verdict_message,
)

RETRY_S = 0.05  # between a member's attempts to dial the leader
HELLO_S = 5.0  # a connection must say who it is within this
MAX_CONNECTIONS = 256  # open at once; more are refused (a flood cannot exhaust the leader)
MAX_NOTES = 8  # rejections and duplicates kept word for word; the rest are counted
Clock = Callable[[], float]


class Notes(List[str]):
    """A list of reasons that keeps the first MAX_NOTES and counts the rest: anyone who
    can reach the port can make the leader refuse them, for as long as it listens (a loop
    of connect-and-close is thousands a second), and nothing a peer does may grow the
    leader's memory or its report without bound."""

    def __init__(self) -> None:
        super().__init__()
        self.more = 0

    def append(self, text: str) -> None:
        if len(self) < MAX_NOTES:
            super().append(text[:300])
        else:
            self.more += 1

    def listed(self) -> List[str]:
        return list(self) + ([f"{self.more} more not listed"] if self.more else [])


def leader_deadline(start: float, deadline: float) -> float:
    """The leader decides a little before the members give up, so its verdict reaches
    them: a tenth of the budget, at most 2 s."""
    return deadline - min(2.0, max(0.0, deadline - start) * 0.1)


def lead(
    config: GroupConfig,
    own_facts: Mapping[str, Any],
    deadline: float,
    *,
    clock: Clock = time.monotonic,
    plan: Optional[Callable[[Mapping[int, Mapping[str, Any]]], Dict[str, Any]]] = None,
) -> GroupVerdict:
    """Listen, collect every member's hello until all came or ``deadline`` (a clock
    value), judge, and answer every member that came with the verdict. ``plan`` adds
    what every member needs next (the deep tier's rank layout) to a verdict that is not
    a failure, under evidence["allreduce"]."""
    started = clock()
    try:
        server = _listen(config)
    except OSError as exc:
        return GroupVerdict(
            "fail",
            f"the leader could not listen on TCP {config.bind or '*'}:{config.port}: {exc}"
            + (" (something else uses the port)" if exc.errno == errno.EADDRINUSE else ""),
            "set another port (PREFLIGHT_GROUP_PORT, chart value injection.groupPort) that "
            "vLLM and the node leave free",
            {"group": config.group_id, "size": config.size, "port": config.port},
        )
    members: Dict[int, Dict[str, Any]] = {0: clean_facts(own_facts)}
    conns: Dict[int, socket.socket] = {}
    rejected, duplicates = Notes(), Notes()
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ, None)
    pending: Dict[socket.socket, Tuple[FrameReader, str, float]] = {}
    try:
        while len(members) < config.size:
            now = clock()
            if now >= deadline:
                break
            _expire_silent(selector, pending, rejected, now)
            for key, _ in selector.select(timeout=min(0.5, max(0.0, deadline - now))):
                if key.fileobj is server:
                    _accept(server, selector, pending, rejected, clock())
                elif isinstance(key.fileobj, socket.socket):
                    _take_hello(
                        key.fileobj,
                        config,
                        selector=selector,
                        pending=pending,
                        members=members,
                        conns=conns,
                        rejected=rejected,
                        duplicates=duplicates,
                    )
        verdict = judge(
            config,
            members,
            waited_s=clock() - started,
            rejected=rejected.listed(),
            duplicates=duplicates.listed(),
        )
        if plan is not None and verdict.status != "fail":
            verdict.evidence["allreduce"] = plan(members)
        answer = verdict_message(verdict)
        for sock in conns.values():
            _send(sock, answer)
        return verdict
    finally:
        for sock in list(pending):
            _drop(selector, pending, sock)
        for sock in conns.values():
            sock.close()
        selector.close()
        server.close()


def _listen(config: GroupConfig) -> socket.socket:
    family = socket.AF_INET6 if ":" in config.bind else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((config.bind, config.port))
        server.listen(min(MAX_CONNECTIONS, config.size + 16))
        server.setblocking(False)
    except OSError:
        server.close()
        raise
    return server


def _expire_silent(
    selector: selectors.BaseSelector,
    pending: Dict[socket.socket, Tuple[FrameReader, str, float]],
    rejected: List[str],
    now: float,
) -> None:
    """Drop the connections that sent no hello this protocol knows within HELLO_S."""
    for sock, (_, peer, since) in list(pending.items()):
        if now - since > HELLO_S:
            rejected.append(f"{peer}: said nothing this protocol knows in {HELLO_S:g} s")
            _drop(selector, pending, sock)


def _take_hello(
    sock: socket.socket,
    config: GroupConfig,
    *,
    selector: selectors.BaseSelector,
    pending: Dict[socket.socket, Tuple[FrameReader, str, float]],
    members: Dict[int, Dict[str, Any]],
    conns: Dict[int, socket.socket],
    rejected: List[str],
    duplicates: List[str],
) -> None:
    """Read what a pending connection sent; a whole hello makes it a member (or a duplicate,
    which is told so and closed), a bad one is rejected."""
    got = _read_hello(sock, pending, config)
    if got is None:
        return
    if isinstance(got, str):
        rejected.append(got)
        _drop(selector, pending, sock)
        return
    index, facts = got
    selector.unregister(sock)
    _, peer, _ = pending.pop(sock, (None, "", 0.0))
    # the address the socket saw, never what the peer says: facts from a peer hold no
    # peer_ip (clean_facts drops unknown keys)
    facts["peer_ip"] = peer.rsplit(":", 1)[0] if peer else ""
    same_pod = next(
        (i for i, m in members.items() if facts.get("uid") and m.get("uid") == facts["uid"]),
        None,
    )
    if index in members or same_pod is not None:
        reason = (
            _duplicate(index, members[index], facts)
            if index in members
            else _same_pod(index, same_pod, facts)
        )
        duplicates.append(reason)
        _send(sock, {"proto": PROTOCOL, "type": "reject", "reason": reason})
        sock.close()
        return
    members[index], conns[index] = facts, sock


def _accept(
    server: socket.socket,
    selector: selectors.BaseSelector,
    pending: Dict[socket.socket, Tuple[FrameReader, str, float]],
    rejected: List[str],
    now: float,
) -> None:
    try:
        sock, peer = server.accept()
    except OSError:
        return
    name = _peer(peer)
    if len(pending) >= MAX_CONNECTIONS:
        rejected.append(f"{name}: refused, {MAX_CONNECTIONS} connections already open")
        sock.close()
        return
    sock.setblocking(False)
    pending[sock] = (FrameReader(), name, now)
    selector.register(sock, selectors.EVENT_READ, None)


def _read_hello(
    sock: socket.socket,
    pending: Dict[socket.socket, Tuple[FrameReader, str, float]],
    config: GroupConfig,
) -> Optional[Any]:
    """(index, facts), a rejection reason (str), or None (nothing whole yet)."""
    reader, peer, _ = pending[sock]
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return None
    except OSError as exc:
        return f"{peer}: {exc}"
    if not data:
        return f"{peer}: closed the connection before saying who it is"
    try:
        messages = reader.feed(data)
        if not messages:
            return None
        return read_hello(messages[0], config)
    except ProtocolError as exc:
        reason = f"{peer}: {exc}"
        if reader.pending == 0:  # a framed message of ours: tell the sender why
            _send(sock, {"proto": PROTOCOL, "type": "reject", "reason": reason})
        return reason


def _same_pod(index: int, other: Any, facts: Mapping[str, Any]) -> str:
    return (
        f"member index {index} presents pod uid {facts.get('uid')}, which member {other} "
        "already presented: one pod is one member"
    )


def _duplicate(index: int, first: Mapping[str, Any], second: Mapping[str, Any]) -> str:
    return (
        f"two pods claim member index {index} ({first.get('node') or first.get('host')} and "
        f"{second.get('node') or second.get('host')}): the group's index "
        "(LWS_WORKER_INDEX / --node-rank / PREFLIGHT_GROUP_INDEX) must be unique"
    )


def _drop(
    selector: selectors.BaseSelector,
    pending: Dict[socket.socket, Tuple[FrameReader, str, float]],
    sock: socket.socket,
) -> None:
    pending.pop(sock, None)
    with contextlib.suppress(KeyError, ValueError):
        selector.unregister(sock)
    sock.close()


def _send(sock: socket.socket, message: Mapping[str, Any]) -> None:
    try:
        sock.setblocking(True)
        sock.settimeout(2.0)
        sock.sendall(encode(message))
    except (OSError, ProtocolError):
        pass  # the member went away; it reports its own side


def _peer(peer: Any) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


def join(
    config: GroupConfig,
    own_facts: Mapping[str, Any],
    deadline: float,
    *,
    clock: Clock = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> GroupVerdict:
    """Dial the leader until ``deadline``, send this member's facts, return its verdict."""
    started = clock()
    last_error = "never tried"
    message = encode(hello(config, own_facts))
    while True:
        left = deadline - clock()
        if left <= 0:
            return member_outcome_unreachable(config, clock() - started, last_error)
        try:
            sock = socket.create_connection((config.address, config.port), timeout=min(1.0, left))
        except socket.gaierror as exc:
            last_error = f"DNS: {config.address!r} does not resolve ({exc.strerror or exc})"
            sleep(min(RETRY_S, max(0.0, deadline - clock())))
            continue
        except OSError as exc:
            last_error = _describe(exc)
            sleep(min(RETRY_S, max(0.0, deadline - clock())))
            continue
        try:
            outcome = _exchange(sock, message, deadline, clock)
        finally:
            sock.close()
        if isinstance(outcome, GroupVerdict):
            return outcome
        last_error = outcome  # the connection dropped before a verdict: dial again


def _exchange(
    sock: socket.socket, message: bytes, deadline: float, clock: Clock
) -> GroupVerdict | str:
    reader = FrameReader()
    try:
        sock.sendall(message)
        while True:
            left = deadline - clock()
            if left <= 0:
                return "connected, but the leader sent no verdict before the deadline"
            sock.settimeout(left)
            data = sock.recv(65536)
            if not data:
                return "the leader closed the connection without a verdict"
            for frame in reader.feed(data):
                if frame.get("type") == "reject":
                    return GroupVerdict(
                        "fail",
                        f"the group's leader refused this member: {frame.get('reason')}",
                        "give every pod of the group the same group settings "
                        "(LWS_GROUP_SIZE / --nnodes, the group id) and a unique index",
                        {"leader": f"{_peer(sock.getpeername())}"},
                    )
                return read_verdict(frame)
    except socket.timeout:
        return "connected, but the leader sent no verdict before the deadline"
    except ProtocolError as exc:
        return f"the leader's answer is not this protocol ({exc})"
    except OSError as exc:
        return _describe(exc)


def _describe(exc: OSError) -> str:
    if exc.errno == errno.ECONNREFUSED:
        return "connection refused (the leader is not listening yet, or another port)"
    if isinstance(exc, socket.timeout) or exc.errno == errno.ETIMEDOUT:
        return "connection timed out (a NetworkPolicy or firewall dropping the packets?)"
    if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return f"no route to the leader ({exc.strerror})"
    return f"{type(exc).__name__}: {exc}"
