"""A synthetic floor: the simulator's contract (the same events, JSON Lines, the same
truth file) at well over 100,000 events a second on one core, for load and history
tests past what the simulator deals (about 6,000 events a second).

Each kind of table (jurisdiction, game, variant, and length of its id) is dealt once by
the simulator (`TableRun`, unsigned), to the end of its second shoe; every table of
that kind then plays it again under its own id, the first shoe's rounds once and the
second shoe's rounds over and over, each time with new event ids, round ids, seqs,
times and digests (each event's `prev_digest` is the SHA-256 of its device's previous
event's canonical Avro form, as the simulator's: `pitwatch.events.avro.encode`, here
put together from the template's bytes). A template event whose prev_digest the
simulator broke on purpose stays broken (a digest of nothing it follows), and its
truth record is the template's, under the new ids. Every table of a kind deals the
same cards; the same arguments give byte-identical output.

Event ids: the template's first 24 characters (its random part) and 12 hex digits of
the table's number and the copy's, so no two events of a floor share one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from pitwatch.events.avro import encode
from pitwatch.events.jsonl import dumps
from pitwatch.events.model import Event

from .floor import TableConfig, floor_tables
from .table import TABLE_STAGGER_MS, TableRun


def _long(n: int) -> bytes:
    """Avro's zigzag varint of a long."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


#: The varints of 0 to 16,383 (lengths, seqs), made once.
_SMALL = [_long(i) for i in range(1 << 14)]


def _varint(n: int) -> bytes:
    """`_long`, the common cases without a loop: a small number, a time in ms."""
    if 0 <= n < 1 << 14:
        return _SMALL[n]
    z = n << 1
    if 1 << 35 <= z < 1 << 42:  # a time in ms from 1971 to 2109: six bytes
        return bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80, ((z >> 14) & 0x7F) | 0x80,
                      ((z >> 21) & 0x7F) | 0x80, ((z >> 28) & 0x7F) | 0x80, z >> 35))
    return _long(n)


def _str(b: bytes) -> bytes:
    return _varint(len(b)) + b


def envelope(event_id: bytes, table_id: bytes, device_id: bytes, seq: int, ts: int,
             round_id: bytes | None, prev: bytes | None) -> bytes:
    """The canonical Avro form of an event's envelope (TableEvent.avsc: the fields before
    `payload`; the unions null first)."""
    return (_str(event_id) + _str(table_id) + _str(device_id) + _long(seq) + _long(ts)
            + (b"\x00" if round_id is None else b"\x02" + _str(round_id))
            + (b"\x00" if prev is None else b"\x02" + _str(prev)))


@dataclass(slots=True)
class _Tpl:
    """A template event: what changes from copy to copy taken apart from what does not."""

    ev: Event
    eid_head: bytes  # the template's event id, its first 24 characters
    seq: int
    ts: int
    in_round: bool
    device: int  # index into the kind's devices
    round_k: int  # the template round it belongs to (0: the opening)
    chained: bool | None  # prev_digest: the device's previous event's (True), none, broken
    json_head: bytes  # the JSON Lines form up to the event id's value
    json_tail: bytes  # the JSON Lines form after "prev_digest":..., table id as {T}
    tail_has_table: bool
    payload: bytes  # the canonical Avro form's payload part
    payload_has_table: bool


@dataclass(slots=True)
class Kind:
    """One kind of table, dealt by the simulator: its opening, its first shoe's rounds
    (`head`), its second shoe's (`cycle`), and how far a cycle moves each device's seq
    and the clock."""

    cfg: TableConfig
    opening: list[_Tpl] = field(default_factory=list)
    rounds: dict[int, list[_Tpl]] = field(default_factory=dict)
    head: list[int] = field(default_factory=list)
    cycle: list[int] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    seq_step: list[int] = field(default_factory=list)
    ts_step: int = 0
    truth: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def _template(cfg: TableConfig, seed: int, inject: float) -> Kind:
    truth: list[dict[str, Any]] = []
    run = TableRun(cfg, seed, 10_000, inject, truth, sign=False)
    kind = Kind(cfg)
    batches: list[tuple[int, list[Event]]] = [(0, run.opening())]
    shoes: list[int] = []  # the rounds that start with a ShoeLoaded
    k = 0
    while len(shoes) < 3:
        k += 1
        evs = run.play(k)
        if evs and type(evs[0].payload).__name__ == "ShoeLoaded":
            shoes.append(k)
        batches.append((k, evs))
    first, second, third = shoes
    kind.head = list(range(1, first))
    kind.cycle = list(range(first, second))
    tid = cfg.table_id.encode()
    last_digest: dict[str, bytes] = {}
    seq_at: dict[int, dict[str, int]] = {}
    ts_at: dict[int, int] = {}
    for rk, evs in batches:
        if rk > third:
            break
        seq_at[rk] = {}
        ts_at.setdefault(rk, evs[0].ts if evs else 0)
        tpls = []
        for ev in evs:
            if ev.device_id not in kind.devices:
                kind.devices.append(ev.device_id)
            raw = encode(ev)
            env = envelope(ev.event_id.encode(), tid, ev.device_id.encode(), ev.seq, ev.ts,
                           None if ev.round_id is None else ev.round_id.encode(),
                           ev.prev_digest)
            assert raw.startswith(env), "the envelope's Avro form moved: update envelope()"
            line = dumps(ev)
            cut = line.index(b'"prev_digest":')
            tail = line[cut + len(b'"prev_digest":'):]
            tail = tail[tail.index(b",") if b"," in tail else len(tail) - 1:]
            chained = (None if ev.prev_digest is None
                       else ev.prev_digest == last_digest.get(f"{ev.device_id}/{ev.seq - 1}"))
            head = b'{"type":"' + type(ev.payload).__name__.encode() + b'","event_id":"'
            assert line.startswith(head) and len(ev.event_id) == 36
            tpls.append(_Tpl(ev, ev.event_id.encode()[:24], ev.seq, ev.ts,
                             ev.round_id is not None, kind.devices.index(ev.device_id), rk,
                             chained, head,
                             tail.replace(tid, b"{T}"), tid in tail, raw[len(env):],
                             tid in raw[len(env):]))
            last_digest.setdefault(f"{ev.device_id}/{ev.seq}", hashlib.sha256(raw).digest())
            seq_at[rk][ev.device_id] = ev.seq
        if rk == 0:
            kind.opening = tpls
        else:
            kind.rounds[rk] = tpls
    for rec in truth:
        rk = int(rec["round_id"].rsplit("-", 1)[1]) if rec.get("round_id") else 0
        kind.truth.setdefault(rk, []).append(rec)

    def last_seq(upto: int, d: str) -> int:
        return max((s[d] for r, s in seq_at.items() if r <= upto and d in s), default=0)

    kind.seq_step = [last_seq(second - 1, d) - last_seq(first - 1, d) for d in kind.devices]
    kind.ts_step = ts_at[second] - ts_at[first]
    return kind


class SyntheticFloor:
    """`tables` tables of `rounds` rounds each, events in the simulator's order (every
    table's opening, then round 1 of every table, and so on)."""

    def __init__(self, tables: int, rounds: int, seed: int, inject: float = 0.0, *,
                 jurisdiction: str | None = None, game: str | None = None) -> None:
        if rounds < 1:
            raise ValueError(f"--rounds must be at least 1, not {rounds}")
        if not 0.0 <= inject <= 1.0:
            raise ValueError(f"--inject is a share of rounds, 0 to 1, not {inject}")
        self.configs = floor_tables(tables, jurisdiction=jurisdiction, game=game)
        self.rounds, self.seed = rounds, seed
        kinds: dict[tuple[str, str, str, int], Kind] = {}
        self.kind_of: list[Kind] = []
        for cfg in self.configs:
            key = (cfg.jurisdiction, cfg.game, cfg.variant, len(cfg.table_id))
            if key not in kinds:
                kinds[key] = _template(cfg, seed, inject)
            self.kind_of.append(kinds[key])
        self.kinds = list(kinds.values())
        self.truth: list[dict[str, Any]] = []
        self.event_count = 0

    def _plan(self, kind: Kind, n: int) -> tuple[int, int]:
        """Round `n` of a table of `kind`: (template round, copy of the cycle)."""
        if n <= len(kind.head):
            return kind.head[n - 1], 0
        i = n - len(kind.head) - 1
        return kind.cycle[i % len(kind.cycle)], i // len(kind.cycle)

    def lines(self) -> Iterator[bytes]:
        """The floor's events as JSON Lines (each line without its newline)."""
        tables = []
        for cfg, kind in zip(self.configs, self.kind_of, strict=True):
            tables.append(_Table(cfg, kind, (cfg.index - kind.cfg.index) * TABLE_STAGGER_MS))
        for t in tables:
            yield from t.emit(t.kind.opening, 0, 0, self.truth)
        for n in range(1, self.rounds + 1):
            for t in tables:
                rk, c = self._plan(t.kind, n)
                yield from t.emit(t.kind.rounds[rk], n, c, self.truth)
        self.event_count = sum(t.count for t in tables)

    def write(self, out: Path) -> int:
        """DIR/events.jsonl and DIR/truth.jsonl, as `pitwatch simulate` writes them; the
        event count."""
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "events.jsonl", "wb") as f:
            _write_lines(f, self.lines())
        with open(out / "truth.jsonl", "wb") as tf:
            for rec in self.truth:
                tf.write(orjson.dumps(rec) + b"\n")
        return self.event_count


def _write_lines(f: IO[bytes], lines: Iterator[bytes]) -> None:
    buf: list[bytes] = []
    for line in lines:
        buf.append(line)
        if len(buf) >= 4096:
            f.write(b"\n".join(buf) + b"\n")
            buf = []
    if buf:
        f.write(b"\n".join(buf) + b"\n")


class _Table:
    """One table of the synthetic floor as it is emitted: its devices' seqs and digests."""

    def __init__(self, cfg: TableConfig, kind: Kind, ts_shift: int) -> None:
        self.cfg, self.kind, self.ts_shift = cfg, kind, ts_shift
        self.tid = cfg.table_id.encode()
        tpl = kind.cfg.table_id.encode()
        self.devices = [d.encode().replace(tpl, self.tid) for d in kind.devices]
        #: each device's digests of its recent seqs (an event out of order, or sent
        #: twice, chains to its seq's predecessor, not to the event sent before it)
        self.digest: list[dict[int, bytes]] = [{} for _ in kind.devices]
        self.payloads: dict[int, bytes] = {}
        self.count = 0
        self.head = b'","table_id":"' + self.tid + b'","device_id":"'
        #: the envelope's table and device, as Avro, a device
        self.env_mid = [_str(self.tid) + _str(d) for d in self.devices]

    def _payload(self, t: _Tpl) -> bytes:
        if not t.payload_has_table or self.tid == self.kind.cfg.table_id.encode():
            return t.payload
        got = self.payloads.get(id(t))
        if got is None:
            line = dumps(t.ev).replace(self.kind.cfg.table_id.encode(), self.tid)
            from pitwatch.events.jsonl import loads

            ev = loads(line)
            full = encode(ev)
            env = envelope(ev.event_id.encode(), self.tid, ev.device_id.encode(), ev.seq,
                           ev.ts, None if ev.round_id is None else ev.round_id.encode(),
                           ev.prev_digest)
            got = self.payloads[id(t)] = full[len(env):]
        return got

    def emit(self, tpls: list[_Tpl], n: int, c: int, truth: list[dict[str, Any]]
             ) -> Iterator[bytes]:
        kind = self.kind
        suffix = b"%04x%08x" % (self.cfg.index, n)
        rid = None if n == 0 else self.tid + b"-%06d" % n
        rid_json = b"null" if rid is None else b'"' + rid + b'"'
        rid_avro = b"" if rid is None else b"\x02" + _str(rid)
        shift = self.ts_shift + c * kind.ts_step
        steps = [c * x for x in kind.seq_step]
        digest, env_mid, devices, head = self.digest, self.env_mid, self.devices, self.head
        sha256, tid = hashlib.sha256, self.tid
        for t in tpls:
            eid = t.eid_head + suffix
            d = t.device
            seq = t.seq + steps[d]
            ts = t.ts + shift
            if t.chained is None:
                prev = None
            elif t.chained:
                prev = digest[d].get(seq - 1)
            else:  # broken on purpose in the template: broken here too
                prev = sha256(b"broken/" + eid).digest()
            raw = b"".join((b"\x48", eid, env_mid[d], _varint(seq), _varint(ts),
                            rid_avro if t.in_round else b"\x00",
                            b"\x00" if prev is None else b"\x02\x40" + prev,
                            self._payload(t) if t.payload_has_table else t.payload))
            mine = digest[d]
            if seq not in mine:  # a second event under a seq: the first stands
                mine[seq] = sha256(raw).digest()
            if len(mine) > 64:
                for old in sorted(mine)[:32]:
                    del mine[old]
            yield b"".join((t.json_head, eid, head, devices[d], b'","seq":',
                            b"%d" % seq, b',"ts":', b"%d" % ts, b',"round_id":',
                            rid_json if t.in_round else b"null", b',"prev_digest":',
                            b"null" if prev is None else b'"' + prev.hex().encode() + b'"',
                            t.json_tail.replace(b"{T}", tid) if t.tail_has_table
                            else t.json_tail))
        self.count += len(tpls)
        for rec in kind.truth.get(tpls[0].round_k if tpls else -1, []):
            truth.append({**rec, "table_id": self.cfg.table_id,
                          "round_id": None if rid is None else rid.decode(),
                          "event_id": None if not rec.get("event_id")
                          else rec["event_id"][:24] + suffix.decode()})
