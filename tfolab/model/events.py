"""The timeline's events: segments on the wire, application calls, timers, notes.

Rules:
- Every event is a frozen dataclass with a unique, increasing `id`, the
  `iteration` it belongs to (0 = connection setup or the unmeasured warm-up),
  the `connection` it happened on (1-based, in the order connections opened),
  a time in milliseconds (`time_ms`; for a segment, the time it left),
  a one-line `explanation` a student can read, a readable `cause` and the id of
  the event that caused it (`caused_by`, None for the start of a script).
- `caused_by` always points to an earlier event; following it backwards from
  a headline's end gives the critical path the predictions are built from.
- `to_json()` gives plain JSON types and a "kind" key.
- The Recorder is the only place ids are handed out; it converts the loop's
  integer nanoseconds into milliseconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from tfolab.model.options import FastOpen, TcpOption, labels

Side = Literal["client", "server"]
TimerAction = Literal["armed", "fired", "cancelled"]
NS_PER_MS = 1_000_000


def ns_to_ms(t_ns: int) -> float:
    return t_ns / NS_PER_MS


@dataclass(frozen=True)
class CookieInfo:
    """The TCP Fast Open option as it appears in a SYN or SYN-ACK."""

    option_kind: int  # 34 (RFC 7413) or 254 (experimental, magic 0xF989)
    length: int  # 0 = cookie request, 8 = a cookie
    value_hex: str = ""  # the cookie bytes, "" for a request
    key_generation: int = 0  # which server key made it (1 = the first key)

    def option(self) -> FastOpen:
        """The option a segment carries for it (a model cookie states its length only)."""
        return FastOpen(self.option_kind, self.length)


@dataclass(frozen=True)
class Segment:
    id: int
    iteration: int
    connection: int
    sent_ms: float
    arrived_ms: float
    sender: Side
    flags: tuple[str, ...]
    seq: int  # relative: the sender's ISN is 0
    ack: int | None  # relative, None when the ACK flag is off
    length: int  # payload bytes
    options: tuple[TcpOption, ...]
    cookie: CookieInfo | None
    what: str  # what the segment carries, for explanations: "SYN+data", "request", "ACK"
    explanation: str
    cause: str
    caused_by: int | None
    # an ACK the kernel may merge away: the receiving application held the
    # socket, so tcp_add_backlog may coalesce this segment with the next one
    race: bool = False
    # the TCP header's window field as on the wire (a SYN's or SYN-ACK's
    # unscaled, later ones >> the sender's window scale); None: not stated
    window: int | None = None
    # other window fields a race may give it (burst.py: the reader won earlier)
    window_alternatives: tuple[int, ...] = ()
    # a race ACK the kernel may defer to the end of its burst: then it acknowledges
    # this instead, with one of merged_windows (burst.py, delack_timer.py)
    merged_ack: int | None = None
    merged_windows: tuple[int, ...] = ()
    # the first segment of an skb tcp_transmit_skb sent (False: a later segment
    # of the same GSO packet); the domain counts packets by it, JSON leaves it out
    starts_skb: bool = True
    # its PSH may be either way: a race on where GSO skbs end (output.py: the host's
    # round trip decides how many segments tcp_tso_autosize allows)
    psh_race: bool = False
    # the path lost it (the `drop` setting, path.py): it never arrives; arrived_ms is
    # when its delay would have ended, as the delayer stamps a packet it drops
    lost: bool = False

    @property
    def time_ms(self) -> float:
        return self.sent_ms

    @property
    def receiver(self) -> Side:
        return "server" if self.sender == "client" else "client"

    @property
    def end_seq(self) -> int:
        return self.seq + self.length + ("SYN" in self.flags) + ("FIN" in self.flags)

    def label(self) -> str:
        """Short text for a ladder arrow: 'SYN seq=0 len=16 TFO cookie'."""
        parts = [",".join(self.flags), f"seq={self.seq}"]
        if self.ack is not None:
            parts.append(f"ack={self.ack}")
        if self.length:
            parts.append(f"len={self.length}")
        if self.cookie is not None:
            parts.append("TFO req" if self.cookie.length == 0 else "TFO cookie")
        if self.lost:
            parts.append("(lost)")
        return " ".join(parts)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["kind"] = "segment"
        data["flags"] = list(self.flags)
        data["options"] = labels(self.options)
        data["window_alternatives"] = list(self.window_alternatives)
        del data["starts_skb"]
        if not self.psh_race:
            del data["psh_race"]
        if not self.lost:
            del data["lost"]
        if self.merged_ack is None:
            del data["merged_ack"], data["merged_windows"]
        else:
            data["merged_windows"] = list(self.merged_windows)
        data["label"] = self.label()
        return data


@dataclass(frozen=True)
class AppCall:
    id: int
    iteration: int
    connection: int
    time_ms: float
    side: Side
    call: str  # connect, sendto, write, read, close, accept, setsockopt
    detail: str
    explanation: str
    cause: str
    caused_by: int | None

    def to_json(self) -> dict[str, object]:
        return {"kind": "app", **asdict(self)}


@dataclass(frozen=True)
class Timer:
    id: int
    iteration: int
    connection: int
    time_ms: float
    side: Side
    name: str  # "delack"
    action: TimerAction
    deadline_ms: float
    explanation: str
    cause: str
    caused_by: int | None
    # cancelled, but the timer could have beaten the application's send: on a
    # real machine the ACK may then leave on its own just before that segment
    race: bool = False
    # fired, but only if its burst's deferred ACK did not already cover the data: on
    # a real machine it may never have been armed (delack_timer.py)
    unless_merged: bool = False
    # the ticks within which a real machine fires it after the model does or before:
    # the timer wheel's granularity at its level (clock.wheel_granularity) where it was
    # armed off the wheel's grid, else 1 (the jiffies phase)
    spread_ticks: int = 1

    def to_json(self) -> dict[str, object]:
        data = {"kind": "timer", **asdict(self)}
        if not self.unless_merged:
            del data["unless_merged"]
        if self.spread_ticks == 1:
            del data["spread_ticks"]
        return data


@dataclass(frozen=True)
class Note:
    id: int
    iteration: int
    connection: int
    time_ms: float
    side: Side | Literal["both"]
    text: str
    cause: str = ""
    caused_by: int | None = None

    @property
    def explanation(self) -> str:
        return self.text

    def to_json(self) -> dict[str, object]:
        return {"kind": "note", **asdict(self), "explanation": self.text}


Event = Segment | AppCall | Timer | Note


@dataclass
class Recorder:
    """Collects events in creation order and hands out their ids."""

    events: list[Event] = field(default_factory=list)

    def _id(self) -> int:
        return len(self.events) + 1  # ids are 1, 2, 3, ... in creation order

    def get(self, event_id: int) -> Event:
        """The event with this id (ids are dense: see _id)."""
        return self.events[event_id - 1]

    def last_arrival(self, connection: int, receiver: Side, after_id: int, at_ms: float) -> int:
        """The latest segment to `receiver` on `connection`, recorded after `after_id` and
        arrived by `at_ms` (a lost one never arrives); `after_id` itself when there is none."""
        for event in reversed(self.events[after_id:]):
            if (
                isinstance(event, Segment)
                and event.connection == connection
                and event.receiver == receiver
                and not event.lost
                and event.arrived_ms <= at_ms
            ):
                return event.id
        return after_id

    def _add(self, event: Event) -> Event:
        self.events.append(event)
        return event

    def amend_segment(self, event_id: int, **changes: object) -> None:
        """Replace a recorded segment's fields: a race decided later widens its outcomes."""
        event = self.get(event_id)
        assert isinstance(event, Segment)
        self.events[event_id - 1] = replace(event, **changes)  # type: ignore[arg-type]

    def segment(
        self,
        *,
        iteration: int,
        connection: int,
        sent_ns: int,
        arrived_ns: int,
        sender: Side,
        flags: tuple[str, ...],
        seq: int,
        ack: int | None,
        length: int,
        options: tuple[TcpOption, ...],
        cookie: CookieInfo | None,
        what: str,
        explanation: str,
        cause: str,
        caused_by: int | None,
        race: bool = False,
        window: int | None = None,
        window_alternatives: tuple[int, ...] = (),
        starts_skb: bool = True,
        psh_race: bool = False,
        lost: bool = False,
    ) -> Segment:
        event = Segment(
            id=self._id(),
            iteration=iteration,
            connection=connection,
            sent_ms=ns_to_ms(sent_ns),
            arrived_ms=ns_to_ms(arrived_ns),
            sender=sender,
            flags=flags,
            seq=seq,
            ack=ack,
            length=length,
            options=options,
            cookie=cookie,
            what=what,
            explanation=explanation,
            cause=cause,
            caused_by=caused_by,
            race=race,
            window=window,
            window_alternatives=window_alternatives,
            starts_skb=starts_skb,
            psh_race=psh_race,
            lost=lost,
        )
        self._add(event)
        return event

    def app(
        self,
        t_ns: int,
        *,
        iteration: int,
        connection: int,
        side: Side,
        call: str,
        detail: str,
        explanation: str,
        cause: str,
        caused_by: int | None,
    ) -> AppCall:
        event = AppCall(
            id=self._id(),
            iteration=iteration,
            connection=connection,
            time_ms=ns_to_ms(t_ns),
            side=side,
            call=call,
            detail=detail,
            explanation=explanation,
            cause=cause,
            caused_by=caused_by,
        )
        self._add(event)
        return event

    def timer(
        self,
        t_ns: int,
        deadline_ns: int,
        *,
        iteration: int,
        connection: int,
        side: Side,
        name: str,
        action: TimerAction,
        explanation: str,
        cause: str,
        caused_by: int | None,
        race: bool = False,
        unless_merged: bool = False,
        spread_ticks: int = 1,
    ) -> Timer:
        event = Timer(
            id=self._id(),
            iteration=iteration,
            connection=connection,
            time_ms=ns_to_ms(t_ns),
            side=side,
            name=name,
            action=action,
            deadline_ms=ns_to_ms(deadline_ns),
            explanation=explanation,
            cause=cause,
            caused_by=caused_by,
            race=race,
            unless_merged=unless_merged,
            spread_ticks=spread_ticks,
        )
        self._add(event)
        return event

    def note(
        self,
        t_ns: int,
        *,
        iteration: int,
        connection: int,
        side: Side | Literal["both"],
        text: str,
        cause: str = "",
        caused_by: int | None = None,
    ) -> Note:
        event = Note(
            id=self._id(),
            iteration=iteration,
            connection=connection,
            time_ms=ns_to_ms(t_ns),
            side=side,
            text=text,
            cause=cause,
            caused_by=caused_by,
        )
        self._add(event)
        return event

    def timeline(self) -> tuple[Event, ...]:
        """Time-ordered; events at the same instant keep their causal (creation) order."""
        return tuple(sorted(self.events, key=lambda e: (e.time_ms, e.id)))
