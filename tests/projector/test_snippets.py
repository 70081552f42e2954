"""Search snippets are rebuilt from the text: no character ts_headline drops is lost."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from goaicore.projection.postgres.search import JOIN, START, STOP, snippet


def marked(word: str) -> str:
    return f"{START}{word}{STOP}"


def test_a_fragment_gets_back_the_punctuation_at_its_edges() -> None:
    assert snippet("[stage] [door] is here", f"stage] [{marked('door')}] is here") == (
        "[stage] [[door]] is here"
    )
    assert snippet("see (door).", marked("door")) == "([door])."


def test_fragments_are_joined_and_placed_on_whole_words() -> None:
    text = "the doorway, then the door; later «stage» lights"
    headline = f"{marked('door')}{JOIN}{marked('stage')}"
    assert snippet(text, headline) == "[door]; … «[stage]»"


def test_a_fragment_not_in_the_text_is_shown_as_it_came() -> None:
    assert snippet("something else", f"{marked('ghost')} town") == "[ghost] town"


words = st.text(alphabet="abc[]().,;! ", min_size=1, max_size=12)


@given(st.lists(words, min_size=1, max_size=8), st.data())
def test_a_fragment_is_shown_as_whole_tokens_of_the_text(
    parts: list[str], data: st.DataObject
) -> None:
    text = " ".join(parts)
    tokens = text.split()
    if not tokens:
        return
    core = data.draw(st.sampled_from(tokens)).strip("[]().,;!")
    if not core:
        return
    # PostgreSQL's fragment keeps the word and drops the punctuation around it.
    shown = snippet(text, marked(core))
    plain = shown.replace(f"[{core}]", core, 1)
    starts = [i for i in range(len(text)) if text.startswith(plain, i)]
    assert any(  # somewhere in the text, with no token cut at either end
        (at == 0 or text[at - 1].isspace())
        and (at + len(plain) == len(text) or text[at + len(plain)].isspace())
        for at in starts
    ), (text, shown)
