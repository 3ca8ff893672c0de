"""pitwatch.citations: a citation's paragraphs quoted from docs/regulations/."""

from __future__ import annotations

from pathlib import Path

from pitwatch.citations import quote
from pitwatch.packs.registry import all_packs


def test_sub_paragraph_range_quotes_the_paragraph_and_its_items() -> None:
    q = quote("N.J.A.C. 13:69F-2.8(a)1–2")
    assert q is not None
    assert q.source == "docs/regulations/nj-13-69F-2.8-surrender.txt"
    [(label, text)] = q.paragraphs
    assert label == "(a)1–2"
    assert text.startswith("(a) After the first two cards are dealt to the player")
    assert "1. Should the first card dealt to the dealer be other than an ace" in text
    assert "2. Should the first card dealt to the dealer be an ace or 10-value card" in text
    assert "Disclaimer" not in text


def test_one_sub_paragraph_leaves_the_others_out() -> None:
    q = quote("N.J.A.C. 13:69F-2A.8(a)3")
    assert q is not None
    [(label, text)] = q.paragraphs
    assert label == "(a)3"
    assert "3. If a card reader device is in use" in text
    assert "2. Any insurance bets" not in text


def test_letter_range_and_list_and_a_comment_that_names_other_paragraphs() -> None:
    q = quote("N.J.A.C. 13:69F-2.25(d)–(f) (three eights: posted, (f)'s is not in the text)")
    assert q is not None
    assert [lbl for lbl, _ in q.paragraphs] == ["(d)", "(e)", "(f)"]
    # the pay table rows stay with (e), each on its own line
    assert "\n| Six | 15 to 1 |" in dict(q.paragraphs)["(e)"]
    q = quote("N.J.A.C. 13:69F-2.25(a), (h)")
    assert q is not None and [lbl for lbl, _ in q.paragraphs] == ["(a)", "(h)"]
    q = quote("58 Pa. Code § 672a.8(c) (odds of § 672a.11(b) as posted)")
    assert q is not None and [lbl for lbl, _ in q.paragraphs] == ["(c)"]
    assert dict(q.paragraphs)["(c)"].startswith("(c) Winning Insurance Wagers shall be paid")


def test_numbered_paragraphs_of_the_gazette() -> None:
    q = quote("NZ Gazette 1996 No 7, Blackjack 9.2–9.3")
    assert q is not None
    assert [lbl for lbl, _ in q.paragraphs] == ["9.2", "9.3"]
    nine_two = dict(q.paragraphs)["9.2"]
    assert '(a) announce the word "Insurance"' in nine_two
    assert nine_two.endswith("(b) at the same time run a hand along the insurance line.")
    q = quote("NZ Gazette 1996 No 7, Blackjack 9.3, 9.4")
    assert q is not None and [lbl for lbl, _ in q.paragraphs] == ["9.3", "9.4"]
    assert "23" not in dict(q.paragraphs)["9.4"].split()  # the page number is not text


def test_posted_rules_and_the_record_quote_nothing() -> None:
    assert quote("Posted payout odds, 58 Pa. Code § 672a.11 (not in the regulation files)") is None
    assert quote("Posted soft-17 rule of the table under N.J.A.C. 13:69F-2") is None
    assert quote("pitwatch record rule (seq rises by 1 per device)") is None
    assert quote("N.J.A.C. 13:69F-2.8(z)") is None


def test_wrapped_paraphrase_lines_join_and_stop_at_the_next_label(tmp_path: Path) -> None:
    (tmp_path / "nj-13-69F-2.9-insurance.txt").write_text(
        "Paraphrase of N.J.A.C. 13:69F-2.9, read 2026-12-01.\n\n"
        "(a) Insurance may be offered when the\n  dealer's first card is an ace.\n\n"
        "1. It wins 2 to 1\n   on a dealer blackjack.\n"
        "(b) Half the wager at most.\n\nSource: somewhere\n")
    q = quote("N.J.A.C. 13:69F-2.9(a)1", tmp_path)
    assert q is not None
    assert q.paragraphs == (("(a)1", "(a) Insurance may be offered when the dealer's first "
                             "card is an ace.\n1. It wins 2 to 1 on a dealer blackjack."),)
    q = quote("N.J.A.C. 13:69F-2.9(b)", tmp_path)
    assert q is not None and q.paragraphs == (("(b)", "(b) Half the wager at most."),)


def test_every_citation_of_every_pack_quotes_text() -> None:
    """Every rule, posting check and record check of every pack cites a paragraph that
    is quoted, so a finding never shows without the words it rests on."""
    citations = {c for pack in all_packs() for c in (
        *(r.citation for r in (*pack.rules, *pack.posting)),
        *(c for _, c in pack.record_citations.values()))}
    assert len(citations) > 20
    for citation in citations:
        q = quote(citation)
        assert q is not None, citation
        assert q.paragraphs and all(text for _, text in q.paragraphs), citation


def test_a_citation_that_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "posted-rules.txt").write_text(
        "Posted rules: pitwatch's own reading.\n\n"
        "(a) Posted limits. A main wager is at least the posted\nminimum.\n\n"
        "(d) Posted insurance:\n1. offered only where posted;\n"
        "2. at most half the main wager, or the next chip unit\n   when half is no chip.\n")
    q = quote("Posted limits of the table, docs/regulations/posted-rules.txt (a)", tmp_path)
    assert q is not None and q.source == "docs/regulations/posted-rules.txt"
    assert q.paragraphs == (("(a)", "(a) Posted limits. A main wager is at least the posted "
                             "minimum."),)
    q = quote("docs/regulations/posted-rules.txt (d)2 (the words of 13:69F-2A.8(b))",
              tmp_path)
    assert q is not None
    assert q.paragraphs == (("(d)2", "(d) Posted insurance:\n2. at most half the main "
                             "wager, or the next chip unit when half is no chip."),)
    assert quote("docs/regulations/missing.txt (a)", tmp_path) is None


def test_a_record_rule_quotes_its_section_of_the_docs(tmp_path: Path) -> None:
    regs = tmp_path / "docs" / "regulations"
    regs.mkdir(parents=True)
    (tmp_path / "docs" / "events.md").write_text(
        "# Events\n\n## The record\n\nWhat makes a stream a record\nthe audit can vouch for:\n\n"
        "- `seq` rises by 1\n  per device.\n- One seq, one event.\n\n### A detail\n\nmore\n\n"
        "## Rounds\n\nEvery round ends.\n")
    q = quote("pitwatch record rule, docs/events.md § The record (one seq, one event)", regs)
    assert q is not None and q.source == "docs/events.md"
    assert q.paragraphs == (("The record", "What makes a stream a record the audit can vouch "
                             "for:\n- `seq` rises by 1 per device.\n- One seq, one event.\n"
                             "### A detail\nmore"),)
    q = quote("pitwatch record rule, docs/procedure.md § A round, in order", regs)
    assert q is None  # no such file here
    real = quote("pitwatch record rule, docs/events.md § The record (one seq, one event)")
    assert real is not None and "SEQUENCE_CONFLICT" in real.paragraphs[0][1]
