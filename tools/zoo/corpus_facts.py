#!/usr/bin/env python3
"""A corpus of facts to memorise: a fixed table of made-up people, each with fixed attributes
(town, pet, colour, job, food, best friend), stated in short paragraphs of varied sentences.

The table is the same for every split (its own seed, TABLE_SEED); a split's seed only picks which
people a paragraph is about, which of their facts it states, in which words and order. A paragraph
names each person once per fact and states every fact at most once, so the text never repeats a
fact that the context could copy: the held-out split (another seed: other paragraphs over the
same table) can be predicted, past the names, only from what the weights memorised. This is the
text of zoo-facts, the importance-matrix specimen that 2 bits hurt (docs/imatrix.md).

    corpus_facts.py OUT_DIR [--train-mb 6] [--heldout-mb 0.5] [--seed 1] [--people 200]

writes OUT_DIR/train.txt and OUT_DIR/heldout.txt (seed + 1000), one paragraph per line block
(paragraphs never contain an empty line; they are separated by one), as corpus.py does.
Same seed, same bytes.
"""
import argparse
import os
import random

TABLE_SEED = 7
N_PEOPLE = 200
SYLLABLES = ["ba", "bo", "ki", "ko", "lu", "la", "mi", "mo", "nu", "na", "pe", "pi", "ra", "ro", "su", "ta",
             "ti", "vo", "za", "zu", "gi", "fe", "do", "he", "ka", "ri", "se", "tu", "wa", "ye"]
TOWNS = ["Oakford", "Millbrook", "Redhill", "Stonebay", "Ashdale", "Fernwick", "Greyport", "Elmstead",
         "Cobbleton", "Westmoor", "Brightwater", "Lindenfield"]
PETS = ["dog", "cat", "bird", "fox", "frog", "bunny", "duck", "bear", "mouse", "owl", "fish", "horse"]
COLORS = ["red", "blue", "green", "yellow", "pink", "white", "black", "brown", "purple", "orange"]
JOBS = ["baker", "farmer", "teacher", "doctor", "painter", "sailor", "singer", "builder", "cook", "driver",
        "nurse", "pilot"]
FOODS = ["apples", "bread", "cheese", "soup", "rice", "pears", "cake", "fish", "beans", "plums"]

# Each fact in several wordings; the person's name always comes first, so the fact is what follows.
TEMPLATES = {
    "town": ["{p} lives in {v}.", "{p} comes from {v}.", "{p} has a house in {v}.", "{p} was born in {v}."],
    "pet": ["{p} has a {v}.", "{p} keeps a {v} at home.", "{p} takes care of a little {v}.",
            "{p} loves a pet {v}."],
    "color": ["{p} likes the colour {v}.", "{p} wears a {v} hat.", "{p} paints everything {v}.",
              "{p} has a {v} door."],
    "job": ["{p} works as a {v}.", "{p} is a {v}.", "{p} has been a {v} for years.", "{p} wants to stay a {v}."],
    "food": ["{p} likes to eat {v}.", "{p} eats {v} every day.", "{p} buys {v} at the market.",
             "{p} always asks for {v}."],
    "friend": ["{p} is the best friend of {v}.", "{p} often visits {v}.", "{p} writes letters to {v}.",
               "{p} plays games with {v}."],
}


def table(n_people=N_PEOPLE):
    """The people: name -> {attribute: value}; the same for every split."""
    r = random.Random(TABLE_SEED)
    names = []
    while len(names) < n_people:
        name = "".join(r.choice(SYLLABLES) for _ in range(r.choice((2, 3)))).capitalize()
        if name not in names:
            names.append(name)
    people = {}
    for i, name in enumerate(names):
        friend = names[(i + r.randint(1, n_people - 1)) % n_people]
        people[name] = dict(town=r.choice(TOWNS), pet=r.choice(PETS), color=r.choice(COLORS), job=r.choice(JOBS),
                            food=r.choice(FOODS), friend=friend)
    return people


def paragraph(r, people, names):
    """Three to five people, one to three facts each, every fact once."""
    sentences = []
    for name in r.sample(names, r.randint(3, 5)):
        for attr in r.sample(sorted(TEMPLATES), r.randint(1, 3)):
            value = people[name][attr]
            sentence = r.choice(TEMPLATES[attr]).format(p=name, v=value)
            if value[0] in "aeiou":
                sentence = sentence.replace(f" a {value}", f" an {value}")
            sentences.append(sentence)
    return " ".join(sentences)


def write_split(path, seed, megabytes, people):
    r = random.Random(seed)
    names = sorted(people)
    size, limit = 0, int(megabytes * 1e6)
    with open(path, "w", encoding="ascii") as f:
        while size < limit:
            text = paragraph(r, people, names)
            f.write(text + "\n\n")
            size += len(text) + 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--train-mb", type=float, default=6)
    ap.add_argument("--heldout-mb", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--people", type=int, default=N_PEOPLE)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    people = table(args.people)
    write_split(os.path.join(args.out_dir, "train.txt"), args.seed, args.train_mb, people)
    write_split(os.path.join(args.out_dir, "heldout.txt"), args.seed + 1000, args.heldout_mb, people)


if __name__ == "__main__":
    main()
