"""Triage as a workflow: the statuses a finding moves through, what each role may do,
and a change checked against the state it replaces. Pure: the store thread reads the
current state and appends the change (data.ConsoleData.apply_change).

  new -> acknowledged -> investigating -> escalated -> closed (with a disposition)

Any open status may go to any other open one or be closed; a closed finding is
reopened (to acknowledged) by a supervisor. A note or an assignment keeps the status."""

from __future__ import annotations

from dataclasses import dataclass

STATUSES = ("new", "acknowledged", "investigating", "escalated", "closed")
OPEN = frozenset(STATUSES[:-1])
DISPOSITIONS = ("confirmed", "false_alarm", "referred")
ROLES = ("viewer", "operator", "investigator", "supervisor")

#: action -> the status it sets (None: the status stays)
ACTIONS: dict[str, str | None] = {
    "acknowledge": "acknowledged", "investigate": "investigating",
    "escalate": "escalated", "close": "closed", "reopen": "acknowledged",
    "assign": None, "note": None,
}

#: what each role may do; a viewer only reads
MAY: dict[str, frozenset[str]] = {
    "viewer": frozenset(),
    "operator": frozenset({"acknowledge", "escalate", "note"}),
    "investigator": frozenset({"acknowledge", "escalate", "note", "investigate", "close",
                               "assign"}),
    "supervisor": frozenset(ACTIONS),
}

MAX_NOTE = 2000
MAX_AMOUNT = 10**13  # cents: a hundred billion dollars


class Refused(Exception):
    """An action the user may not take, or one that does not fit the finding's state."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class State:
    status: str = "new"
    assignee: str = ""


@dataclass(frozen=True, slots=True)
class Change:
    """What a user asked for: the action and its fields (checked by `check`)."""

    action: str
    note: str = ""
    assignee: str = ""
    disposition: str = ""
    amount: int = 0

    @classmethod
    def parse(cls, body: dict[str, object]) -> Change:
        action = str(body.get("action", ""))
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
        note = str(body.get("note") or "").strip()
        if len(note) > MAX_NOTE:
            raise ValueError(f"note: at most {MAX_NOTE:,} characters")
        assignee = str(body.get("assignee") or "").strip()
        if len(assignee) > 64:
            raise ValueError("assignee: at most 64 characters")
        disposition = str(body.get("disposition") or "")
        amount_raw = body.get("amount")
        amount = 0
        if amount_raw not in (None, ""):
            if isinstance(amount_raw, bool) or not isinstance(amount_raw, (int, str)):
                raise ValueError("amount: whole cents, a number")
            try:
                amount = int(amount_raw)
            except ValueError as exc:
                raise ValueError("amount: whole cents, a number") from exc
            if not 0 <= amount <= MAX_AMOUNT:
                raise ValueError("amount: 0 or more cents")
        if action == "close":
            if disposition not in DISPOSITIONS:
                raise ValueError(f"close needs a disposition: {', '.join(DISPOSITIONS)}")
            if disposition == "false_alarm" and not note:
                raise ValueError("a false alarm needs its reason in the note")
        elif disposition:
            raise ValueError("a disposition goes with close only")
        if action == "note" and not note:
            raise ValueError("note: write something")
        if action == "assign" and not assignee:
            raise ValueError("assign: to whom")
        return cls(action, note, assignee, disposition, amount)


def refusal(role: str, action: str) -> Refused:
    """"an operator may not close" (403)."""
    article = "an" if role[:1] in "aeiou" else "a"
    return Refused(f"{article} {role} may not {action}", 403)


def check(change: Change, role: str, state: State) -> State:
    """The state after the change, or Refused (403: the role may not; 409: the state
    does not allow it)."""
    if change.action not in MAY.get(role, frozenset()):
        raise refusal(role, change.action)
    if change.action == "reopen":
        if state.status != "closed":
            raise Refused("only a closed finding is reopened")
    elif state.status == "closed" and change.action != "note":
        raise Refused("the finding is closed; a supervisor reopens it first")
    new_status = ACTIONS[change.action] or state.status
    if ACTIONS[change.action] and new_status == state.status:
        raise Refused(f"the finding is already {state.status}")
    assignee = change.assignee if change.action == "assign" else state.assignee
    return State(new_status, assignee)
