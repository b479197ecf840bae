"""The forms of English irregular verbs (pure): a question asks `when did we buy the domain?`,
the note says `bought`. The index stems words (Porter), which joins `deploy`, `deployed` and
`deploying` but never `buy` and `bought`; a word of a query that is one of these forms also
matches the others (docs/search.md, "Forms of a word").

Common verbs only, and no form that is a common word of its own that would drown the
question (`lay`, `found`, `left` the side, `saw` the tool, `go` the language are left out).
Only a question's words are widened (memctl.core.query): keywords are matched as typed.
"""

from __future__ import annotations

from memctl.core.stopwords import is_english_stop

# base past participle (one participle when it is the past form)
_TABLE = """
arise arose arisen; awake awoke awoken; bear bore borne; beat beat beaten; become became
become; begin began begun; bend bent; bet bet; bid bid; bind bound; bite bit bitten; bleed
bled; blow blew blown; break broke broken; breed bred; bring brought; build built; burn burnt;
buy bought; catch caught; choose chose chosen; cling clung; come came come; cost cost; creep
crept; deal dealt; dig dug; do did done; draw drew drawn; dream dreamt; drink drank drunk;
drive drove driven; eat ate eaten; fall fell fallen; feed fed; feel felt; fight fought; find
found; flee fled; fly flew flown; forbid forbade forbidden; forget forgot forgotten; forgive
forgave forgiven; freeze froze frozen; get got gotten; give gave given; go went gone; grind
ground; grow grew grown; hang hung; have had; hear heard; hide hid hidden; hit hit; hold held;
hurt hurt; keep kept; kneel knelt; know knew known; lead led; lean leant; leap leapt; learn
learnt; lend lent; let let; light lit; lose lost; make made; mean meant; meet met; pay paid;
prove proven; quit quit; read read; ride rode ridden; ring rang rung; rise rose risen; run ran
run; say said; see saw seen; seek sought; sell sold; send sent; set set; sew sewn; shake shook
shaken; shine shone; shoot shot; show showed shown; shrink shrank shrunk; shut shut; sing sang
sung; sink sank sunk; sit sat; sleep slept; slide slid; speak spoke spoken; speed sped; spend
spent; spin spun; split split; spread spread; spring sprang sprung; stand stood; steal stole
stolen; stick stuck; sting stung; stink stank stunk; strike struck; strive strove striven;
swear swore sworn; sweep swept; swim swam swum; swing swung; take took taken; teach taught;
tear tore torn; tell told; think thought; throw threw thrown; understand understood; undo
undid undone; upset upset; wake woke woken; wear wore worn; weave wove woven; weep wept; win
won; wind wound; withdraw withdrew withdrawn; write wrote written; rebuild rebuilt; rewrite
rewrote rewritten; overcome overcame; undergo underwent undergone; mislead misled; oversee
oversaw overseen; withhold withheld; uphold upheld; rethink rethought
"""

# Forms that are common words or names in their own right (`found` a company, `go` and `lit`
# the language and the library, `won` in "won't", `driven` in "event-driven"), or other
# verbs' forms: never a form, neither looked up nor added. Function words (`do`, `did`,
# `had`, `got`: memctl.core.stopwords) never are either.
_AMBIGUOUS = frozenset("found ground wound left lay lie saw rose bound set let hit cost read quit"
                       " bet bid shut split spread upset lit go win won driven".split())


def _forms() -> dict[str, tuple[str, ...]]:
    forms: dict[str, tuple[str, ...]] = {}
    for entry in _TABLE.split(";"):
        words = tuple(word for word in dict.fromkeys(entry.split())
                      if word not in _AMBIGUOUS and not is_english_stop(word))
        if len(words) < 2:
            continue  # every form alike (`hit hit hit`) or left out: nothing to add
        for word in words:
            forms[word] = words
    return forms


_FORMS: dict[str, tuple[str, ...]] = {}  # built at the first call: every search imports this


def verb_forms(word: str) -> tuple[str, ...]:
    """Every form of the irregular verb `word` is a form of (itself first), or () when it is
    none (or a form too ambiguous to widen)."""
    if not _FORMS:
        _FORMS.update(_forms())
    lowered = word.lower()
    forms = _FORMS.get(lowered)
    if not forms:
        return ()
    return (lowered, *(form for form in forms if form != lowered))
