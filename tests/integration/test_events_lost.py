"""Events Kafka deleted before the audit read them (issue 43): one loud finding per
table, never a cascade of false ones, and a back-fill when they are sent again. The
drill: a third of a floor audited, the worker stopped, the second third sent and
deleted (delete-records, as retention would), the worker started again, the last third
sent, then the gateway's log up to the last third sent again."""

from __future__ import annotations

from collections import Counter

from pitwatch.producers.simulate import Floor

from .conftest import (
    KAFKA,
    Expected,
    Pipeline,
    committed,
    end_offsets,
    wait_until,
)
from .test_streaming import _get

#: what a gap alone must never be reported as
CASCADE = {"CARD_COUNT_EXCEEDED", "SEQUENCE_GAP", "PROCEDURE_OUT_OF_ORDER"}


def _delete_to_end(topic: str) -> dict[tuple[str, int], int]:
    """delete-records up to each partition's end offset; returns those ends."""
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    ends = end_offsets([topic])
    admin = KafkaAdminClient(bootstrap_servers=KAFKA)
    try:
        admin.delete_records({TopicPartition(t, p): o for (t, p), o in ends.items() if o})
    finally:
        admin.close()
    return ends


def _audited(p: Pipeline) -> bool:
    ends = end_offsets([p.events_topic])
    done = committed(p.id)
    return all(done.get(tp, 0) >= o for tp, o in ends.items())


def _violations(p: Pipeline) -> list[dict[str, str]]:
    return list(p.store.query("SELECT violation_id, code, severity, table_id, message "
                              "FROM violations FINAL"))


def test_events_deleted_before_the_audit_read_them(pipeline: Pipeline) -> None:
    events = list(Floor(8, 30, 43, 0.1).events())
    a, b = len(events) // 3, 2 * len(events) // 3
    first, middle, last = events[:a], events[a:b], events[b:]
    whole = Expected(events)  # what the floor holds, every finding a dealer could cause
    read = Expected(first + last)  # the embedded audit of the stretches read
    affected = {e.table_id for e in middle}

    pipeline.start_worker()
    pipeline.produce(first)
    wait_until("the first third audited", lambda: _audited(pipeline), 180)
    pipeline.kill(pipeline.workers[0], 15)

    pipeline.produce(middle)
    _delete_to_end(pipeline.events_topic)

    pipeline.start_worker()
    port = pipeline.web_port
    # noticed at the assignment, before any later event arrives

    def loss_in_health() -> str:
        text = _get(f"http://127.0.0.1:{port}/health") or ""
        return text if "lost:" in text else ""

    health = wait_until("the loss in /health", loss_in_health, 120)
    assert health.startswith("ok\n") and pipeline.events_topic in health
    pipeline.produce(last)
    wait_until("the last third audited and stored",
               lambda: _audited(pipeline) and pipeline.caught_up()
               and pipeline.count("events") == len(first) + len(last), 300)

    got = _violations(pipeline)
    # one loss finding per affected table, naming where (the floor's own injected gaps
    # are EVENTS_LOST findings too, of the stretches read, without that text)
    noted = [v for v in got if v["code"] == "EVENTS_LOST"
             and f"{pipeline.events_topic}[" in v["message"]]
    assert Counter(v["table_id"] for v in noted) == Counter(affected), noted
    # no cascade: a card count, sequence or procedure finding is one the floor holds
    invented = [v for v in got if v["code"] in CASCADE
                and v["violation_id"] not in whole.violation_ids]
    assert not invented, "\n".join(f"{v['code']} {v['table_id']} {v['message']}"
                                   for v in invented)
    # and the rest is the embedded audit's answer for the stretches read, less its own
    # finding of the deleted stretch
    others = {v["violation_id"] for v in got} - {v["violation_id"] for v in noted}
    want = {v.violation_id for v in read.violations
            if v.code != "EVENTS_LOST" or v.violation_id in whole.violation_ids}
    assert others == want, pipeline.explain(read, others, "ClickHouse")

    text = _get(f"http://127.0.0.1:{port}/metrics") or ""
    values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
              if line and not line.startswith("#")}
    assert values["pitwatch_events_lost_total"] == len(middle)
    assert values["pitwatch_losses_total"] >= 1
    log = pipeline.logs()
    assert "EVENTS LOST" in log and "re-send" in log

    # re-sent in its order, the stretch is audited as a back-fill (docs/events.md,
    # "Back-fill"): what it held is found under the ids an unbroken audit gives, and
    # each table's loss finding is raised again, LOW, saying the record is whole again.
    # The gateway sends its log from the start: a table restored from a snapshot lost
    # the events the first worker read after it too, and a copy of an event already
    # audited changes nothing
    pipeline.produce(first + middle)
    lost_ids = {v["violation_id"] for v in noted}

    def healed() -> list[dict[str, str]]:
        now = [v for v in _violations(pipeline) if v["violation_id"] in lost_ids]
        done = all(v["severity"] == "LOW" for v in now) and _audited(pipeline) \
            and pipeline.caught_up()
        return now if done else []

    for v in wait_until("every loss finding healed", healed, 300):
        assert "the record is whole again" in v["message"], v
    now = {v["violation_id"]: v for v in _violations(pipeline)}
    ids = set(now) - lost_ids
    before = {e.round_id for e in first + last}
    inside = {e.round_id for e in middle if e.round_id not in before}
    found_inside = {v.violation_id for v in whole.violations if v.round_id in inside}
    assert found_inside and found_inside <= ids
    extra = ids - others - whole.violation_ids
    assert not extra, "\n".join(f"{now[i]['code']} {now[i]['table_id']} {now[i]['message']}"
                                 for i in extra)
