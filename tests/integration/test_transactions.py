"""A gateway that writes with Kafka transactions (issue 39): the audit reads only what
was committed. An aborted batch whose content differs from the batch committed after
it (every payout doubled) never causes a finding, a stored row or an alert; the
markers the transactions leave never stop the group's commit; and a worker started
again afterwards reads nothing it had committed."""

from __future__ import annotations

import time
from dataclasses import replace

from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event, PayoutMade
from pitwatch.producers.simulate import Floor

from .conftest import KAFKA, Expected, Pipeline, committed, end_offsets, wait_until
from .test_streaming import _assert_alerts, _assert_same, _get

#: events per transaction, and every ABORT_EVERY-th batch is first sent doubled and aborted
BATCH, ABORT_EVERY = 50, 7
#: the group's commit reaches a partition's end within this of the last commit: the
#: worker reads the last records (a fetch waits up to 1.5 s), settles each partition
#: past its markers every second and commits then; the rest is slack for a loaded
#: 2-core machine
SETTLE_WITHIN_S = 10.0


def _doubled(ev: Event) -> Event:
    """The event with its payout doubled (what an aborted attempt carried)."""
    if isinstance(ev.payload, PayoutMade):
        return replace(ev, payload=replace(ev.payload, amount=ev.payload.amount * 2),
                       raw=None)
    return ev


def _send_transactions(topic: str, events: list[Event], txn_id: str) -> tuple[int, float]:
    """Send `events` in transactions of BATCH, every ABORT_EVERY-th first sent with its
    payouts doubled and aborted; returns the number aborted and the monotonic time of
    the last commit."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=KAFKA, transactional_id=txn_id,
                             enable_idempotence=True, acks="all")
    aborted = 0
    try:
        producer.init_transactions()
        for n, i in enumerate(range(0, len(events), BATCH)):
            batch = events[i:i + BATCH]
            if n % ABORT_EVERY == 0:
                producer.begin_transaction()
                for ev in batch:
                    producer.send(topic, key=ev.table_id.encode(),
                                  value=encode_single(_doubled(ev)))
                producer.flush()  # the aborted records are on the log, then aborted
                producer.abort_transaction()
                aborted += 1
            producer.begin_transaction()
            for ev in batch:
                producer.send(topic, key=ev.table_id.encode(), value=encode_single(ev))
            producer.commit_transaction()
        return aborted, time.monotonic()
    finally:
        producer.close()


def _metrics(port: int) -> dict[str, float]:
    text = _get(f"http://127.0.0.1:{port}/metrics") or ""
    return {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def test_aborted_transactions_never_reach_the_audit(pipeline: Pipeline) -> None:
    events = list(Floor(6, 40, 39, 0.1).events())
    aborted_payouts = sum(isinstance(e.payload, PayoutMade)
                          for i in range(0, len(events), BATCH * ABORT_EVERY)
                          for e in events[i:i + BATCH])
    assert aborted_payouts >= 20  # the aborted copies differ from what is committed
    exp = Expected(events)
    pipeline.start_worker()
    aborted, last_commit = _send_transactions(pipeline.events_topic, events,
                                              pipeline.id + "-gateway")
    assert aborted >= 10

    # every committed offset the group may pass, markers included, is passed
    ends = end_offsets([pipeline.events_topic])
    assert sum(ends.values()) > len(events) + aborted * BATCH  # markers hold offsets
    wait_until("the audit's commit at every partition's end",
               lambda: all(committed(pipeline.id).get(tp, 0) >= o for tp, o in ends.items()),
               SETTLE_WITHIN_S + 60)
    settled_after = time.monotonic() - last_commit
    print(f"the audit's commit reached every partition's end {settled_after:.1f} s after "
          "the last transaction's commit")
    assert settled_after <= SETTLE_WITHIN_S, f"committed at the end {settled_after:.1f} s " \
        "after the last transaction"

    # exactly the embedded audit's answer, in ClickHouse and on the alerts topic
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)
    port = pipeline.web_port
    values = _metrics(port)
    assert values["pitwatch_events_total"] == len(events)
    assert values["pitwatch_dead_letters_total"] == 0
    lags = [v for k, v in values.items() if k.startswith("pitwatch_lag{")]
    assert len(lags) == 4 and all(v == 0 for v in lags), values

    # a worker started again reads nothing it had committed
    pipeline.kill(pipeline.workers[0], 15)
    pipeline.start_worker()
    port = pipeline.web_port

    def assigned() -> dict[str, float] | None:
        got = _metrics(port)
        lags = [v for k, v in got.items() if k.startswith("pitwatch_lag{")]
        return got if len(lags) == 4 else None

    wait_until("the restarted worker's partitions", assigned, 120)
    # a copy of each table's last event (a redelivery: a no-op) after everything on its
    # partition: a partition is read in order, so once the worker has read these, any
    # committed record it were to read again it would have read before them
    last = {e.table_id: e for e in events}
    pipeline.produce(list(last.values()))
    ends = end_offsets([pipeline.events_topic])
    wait_until("the redeliveries read and committed",
               lambda: all(committed(pipeline.id).get(tp, 0) >= o for tp, o in ends.items()),
               120)
    values = _metrics(port)
    assert values["pitwatch_events_total"] == len(last), values
    assert all(v == 0 for k, v in values.items() if k.startswith("pitwatch_lag{")), values
    assert "skipped by the consumer" not in pipeline.logs()
