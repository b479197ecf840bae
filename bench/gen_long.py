"""Generate a store of long Markdown documents in one project, fixed seed: the shape of a
team's design notes and reports rather than of short agent notes.

Documents of 2-12 KB: a title, sections, paragraphs and lists, in English (40 %), Chinese
(45 %) or both (15 %). Words follow a Zipf law over a vocabulary of frequent function words and
thousands of content words (English-like words built from syllables; Chinese words of two or
three characters from ~1,800 common characters), so two unrelated documents share their
commonest words, as real ones do. One document in eight is a revision of an earlier one
(2-40 % of its words replaced, sentences dropped or added), which makes the near-duplicates and
contradiction candidates the health report looks for; one in six starts with a shared
boilerplate block.

    python bench/gen_long.py OUT_DIR N [--seed 7] [--project docs]
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path

EN_FUNCTION = ("the of and to a in is that for it as with was on be by this are or from at an "
               "which not but have has can we will should if when all more one their also "
               "into only other than then so its our use used these there been each may "
               "would do new after how must between before because over such").split()
SYLLABLES = ("ka ri to mo se na lu pe di vo ra ne ti ko ba fu mi so ge ha ju le ze qu wa yo "
             "ston ment tion ing er al ic ous able ver con pro pre dis tra ex in com ple").split()
ZH_FUNCTION = ("的 了 是 在 和 有 我们 这个 可以 一个 没有 因为 所以 但是 如果 需要 进行 使用 通过 "
               "对于 以及 已经 就是 还是 这些 那些 其中 并且 或者 为了 之后 之前 时候 问题 方面").split()
# ~1,800 characters from the common-use block, picked by a fixed stride (no word list is
# needed for the statistics that matter here: frequent characters, many two-character words).
ZH_CHARS = [chr(0x4E00 + (n * 7919) % 0x51A5) for n in range(1800)]
BOILERPLATE = {
    "en": "## Status\n\nThis document follows the team template. Owners review it every "
          "quarter; comments go to the design channel. Sections: context, decision, "
          "consequences, open questions.\n\n",
    "zh": "## 状态\n\n本文档遵循团队模板。负责人每个季度复查一次，意见请发到设计频道。"
          "章节：背景、决策、影响、待定问题。\n\n",
}


class Vocabulary:
    def __init__(self, rng: random.Random) -> None:
        words: set[str] = set()
        while len(words) < 12_000:
            words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.choice([2, 2, 3, 3, 4]))))
        self.en = sorted(words)
        rng.shuffle(self.en)
        zh: set[str] = set()
        while len(zh) < 9_000:
            zh.add("".join(rng.choice(ZH_CHARS[:rng.choice([300, 900, 1800])])
                           for _ in range(rng.choice([2, 2, 2, 3]))))
        self.zh = sorted(zh)
        rng.shuffle(self.zh)
        # Zipf weights: the word of rank k is drawn with weight 1/k (cumulated once: a draw
        # is then a binary search).
        self.en_weights = list(accumulate(1 / (k + 1) for k in range(len(self.en))))
        self.zh_weights = list(accumulate(1 / (k + 1) for k in range(len(self.zh))))


def sentence(rng: random.Random, vocab: Vocabulary, language: str) -> str:
    if language == "en":
        length = rng.randint(8, 24)
        content = rng.choices(vocab.en, cum_weights=vocab.en_weights, k=length)
        words = [rng.choice(EN_FUNCTION) if rng.random() < 0.45 else word for word in content]
        words[0] = words[0].capitalize()
        return " ".join(words) + rng.choice([".", ".", ".", "?", ";"])
    length = rng.randint(6, 16)
    content = rng.choices(vocab.zh, cum_weights=vocab.zh_weights, k=length)
    words = [rng.choice(ZH_FUNCTION) if rng.random() < 0.35 else word for word in content]
    return "".join(words) + rng.choice(["。", "。", "，", "；"])


def document(rng: random.Random, vocab: Vocabulary, language: str) -> list[str]:
    """A document as a list of blocks (headings, paragraphs, list items)."""
    target = rng.randint(2_000, 12_000)
    blocks = [f"# {sentence(rng, vocab, language).rstrip('.?;。，；')}"]
    size = len(blocks[0])
    while size < target:
        lang = language if language != "mixed" else rng.choice(["en", "zh"])
        roll = rng.random()
        if roll < 0.15:
            block = f"## {sentence(rng, vocab, lang).rstrip('.?;。，；')[:60]}"
        elif roll < 0.35:
            block = "\n".join(f"- {sentence(rng, vocab, lang)}" for _ in range(rng.randint(2, 6)))
        else:
            joiner = " " if lang == "en" else ""
            block = joiner.join(sentence(rng, vocab, lang) for _ in range(rng.randint(2, 7)))
        blocks.append(block)
        size += len(block) + 2
    return blocks


def revise(rng: random.Random, vocab: Vocabulary, blocks: list[str], language: str) -> list[str]:
    """An edited copy: some words replaced, some blocks dropped, moved or added."""
    rate = rng.choice([0.02, 0.05, 0.1, 0.2, 0.3, 0.4])
    out = []
    for block in blocks:
        if rng.random() < rate / 3:
            continue  # dropped
        if " " in block:
            words = [rng.choice(vocab.en) if rng.random() < rate else w for w in block.split(" ")]
            block = " ".join(words)
        else:
            chars = list(block)
            for position in range(len(chars)):
                if rng.random() < rate / 2 and "\u4e00" <= chars[position] <= "\u9fff":
                    chars[position] = rng.choice(ZH_CHARS)
            block = "".join(chars)
        out.append(block)
        if rng.random() < rate / 3:
            out.append(sentence(rng, vocab, "en" if language == "en" else "zh"))
    return out


def generate(out: Path, count: int, seed: int = 7, project: str = "docs") -> None:
    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memctl.toml").write_text("# memctl settings (benchmark corpus of long documents)\n")
    (out / ".gitignore").write_text(".memctl/\n")
    folder = out / project / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    made: list[tuple[list[str], str]] = []
    for number in range(count):
        language = rng.choices(["en", "zh", "mixed"], weights=[40, 45, 15])[0]
        if made and rng.random() < 1 / 8:
            base, language = rng.choice(made)
            blocks = revise(rng, vocab, base, language)
        else:
            blocks = document(rng, vocab, language)
            if rng.random() < 1 / 6:
                blocks.insert(1, BOILERPLATE["en" if language == "en" else "zh"].strip())
        made.append((blocks, language))
        created = now - timedelta(seconds=rng.randint(0, 365 * 86400))
        stamp = created.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        note_id = f"{int(created.timestamp() * 1000):011x}{number:05x}"[-16:]
        body = "\n\n".join(blocks)
        text = (f"---\nid: {note_id}\ntype: fact\nproject: {project}\nimportance: 5\ntags: []\n"
                f"created: {stamp}\nupdated: {stamp}\nstatus: active\nsource: import\n---\n"
                f"{body}\n")
        (folder / f"doc-{number:05d}-{note_id}.md").write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("count", type=int)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--project", default="docs")
    args = parser.parse_args()
    generate(args.out, args.count, args.seed, args.project)
    sys.stderr.write(f"wrote {args.count} long documents into {args.out}\n")


if __name__ == "__main__":
    main()
