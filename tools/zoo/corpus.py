#!/usr/bin/env python3
"""The zoo's training corpus: short, simple English stories from a seeded generator.

The stories are built so that a small model's attention has structure worth showing:
recurring named characters (a name is introduced once and then referred to again: copying),
dialogue in quotes (quote matching), counting and numbered lists (previous-token and
successor patterns), bracketed asides and bracket games with nested, balanced brackets
(bracket matching), and made-up words that a character says and another repeats (induction:
the only way to predict the repeat is to look back at the first time).

    corpus.py OUT_DIR [--train-mb 24] [--heldout-mb 1] [--seed 1]

writes OUT_DIR/train.txt and OUT_DIR/heldout.txt, one story per paragraph (stories never contain
an empty line; they are separated by one). The held-out split comes from a different seed, so no
story is in both. Same seed, same bytes.
"""
import argparse
import os
import random

GIRLS = ["Lily", "Mia", "Anna", "Zoe", "Emma", "Lucy", "Sara", "Ella", "Ruby", "Nora", "Amy", "Kate",
         "Rose", "Ivy", "Jane", "Molly"]
BOYS = ["Tom", "Ben", "Sam", "Max", "Leo", "Jack", "Tim", "Finn", "Noah", "Luke", "Dan", "Oscar", "Jake",
        "Theo", "Bob", "Pete"]
ANIMALS = ["dog", "cat", "bird", "fox", "frog", "bunny", "duck", "bear", "mouse", "owl", "fish", "horse"]
PET_NAMES = ["Spot", "Fluffy", "Pip", "Buddy", "Daisy", "Coco", "Rex", "Sunny", "Misty", "Bubbles"]
OBJECTS = ["ball", "kite", "doll", "book", "hat", "box", "cup", "car", "drum", "boat", "sock", "shell",
           "stick", "bell", "toy", "cake", "apple", "flower", "stone", "key"]
COLORS = ["red", "blue", "green", "yellow", "pink", "white", "black", "brown", "purple", "orange"]
SIZES = ["big", "little", "small", "tiny", "huge", "long"]
FEELINGS = ["happy", "sad", "scared", "tired", "proud", "angry", "excited", "sleepy", "hungry", "surprised"]
PLACES = ["park", "garden", "forest", "beach", "river", "shop", "school", "farm", "kitchen", "hill", "lake",
          "zoo"]
WEATHER = ["sunny", "rainy", "windy", "cold", "warm", "snowy"]
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
           "twelve"]
SYLLABLES = ["ba", "bo", "ki", "ko", "lu", "la", "mi", "mo", "nu", "na", "pe", "pi", "ra", "ro", "su", "ta",
             "ti", "vo", "za", "zu", "gi", "fe", "do", "he"]
BRACKETS = [("(", ")"), ("[", "]"), ("{", "}")]


def plural(word):
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def article(word):
    return "an" if word[0] in "aeiou" else "a"


class Character:
    def __init__(self, name, girl):
        self.name, self.girl = name, girl
        self.he = "she" if girl else "he"
        self.him = "her" if girl else "him"
        self.his = "her" if girl else "his"
        self.kind = "girl" if girl else "boy"


class StoryWriter:
    def __init__(self, rng):
        self.r = rng

    def pick(self, items):
        return self.r.choice(items)

    def character(self, taken):
        girl = self.r.random() < 0.5
        name = self.pick([n for n in (GIRLS if girl else BOYS) if n not in taken])
        return Character(name, girl)

    def made_up_word(self):
        return "".join(self.pick(SYLLABLES) for _ in range(self.r.randint(2, 4)))

    def brackets(self, depth, budget):
        """A balanced string of brackets, nested up to `depth`, about `budget` pairs."""
        parts = []
        while budget > 0:
            open_, close = self.pick(BRACKETS)
            budget -= 1
            inner = self.brackets(depth - 1, self.r.randint(0, min(budget, 2))) if depth > 1 else ""
            budget -= inner.count(" ") // 2
            parts.append(f"{open_} {inner} {close}" if inner else f"{open_} {close}")
            if self.r.random() < 0.4:
                break
        return " ".join(parts)

    # --- episodes: each returns a list of sentences ---

    def intro(self, a, pet):
        size, color = self.pick(SIZES), self.pick(COLORS)
        options = [
            [f"Once upon a time, there was a little {a.kind} named {a.name}.",
             f"{a.name} had {article(color)} {color} {pet[1]} called {pet[0]}."],
            [f"Once upon a time, in a {size} house near the {self.pick(PLACES)}, lived a {a.kind} named {a.name}.",
             f"{a.name} loved {a.his} {pet[1]}, {pet[0]}."],
            [f"One {self.pick(WEATHER)} day, {a.name} went to the {self.pick(PLACES)} with {a.his} {pet[1]} {pet[0]}."],
            [f"There was once a {size} {pet[1]} named {pet[0]}.",
             f"{pet[0]} lived with a {a.kind} called {a.name}."],
        ]
        return self.pick(options)

    def meet(self, a, b):
        obj, color = self.pick(OBJECTS), self.pick(COLORS)
        return [f"One day, {a.name} met a {b.kind} named {b.name} at the {self.pick(PLACES)}.",
                f"{b.name} had {article(color)} {color} {obj}.",
                f"\"Hello, {b.name}!\" said {a.name}. \"Can I play with your {obj}?\"",
                self.pick([f"\"Yes, you can,\" said {b.name}.",
                           f"{b.name} said, \"Yes! Let us play together.\"",
                           f"\"Not now,\" said {b.name}. \"Maybe later.\""])]

    def dialogue(self, a, b):
        obj, place, feel = self.pick(OBJECTS), self.pick(PLACES), self.pick(FEELINGS)
        lines = [
            (f"\"Where is my {obj}?\" asked {a.name}.", f"\"It is in the {place},\" said {b.name}."),
            (f"{a.name} said, \"I am {feel} today.\"", f"{b.name} asked, \"Why are you {feel}, {a.name}?\""),
            (f"\"Let us go to the {place},\" said {a.name}.", f"\"Good idea!\" said {b.name}."),
            (f"\"Do you like my {obj}?\" asked {a.name}.", f"\"I love your {obj},\" said {b.name}."),
            (f"{b.name} asked, \"Can you help me, {a.name}?\"", f"\"Yes, I can help you,\" said {a.name}."),
        ]
        first, second = self.pick(lines)
        return [first, second]

    def counting(self, a, b):
        obj = self.pick(OBJECTS)
        n, m = self.r.randint(1, 6), self.r.randint(1, 5)
        options = [
            [f"{a.name} had {NUMBERS[n]} {plural(obj) if n > 1 else obj}.",
             f"Then {b.name} gave {a.him} {NUMBERS[m]} more.",
             f"Now {a.name} had {NUMBERS[n + m]} {plural(obj)}."],
            [f"{a.name} counted the {plural(obj)}: " + ", ".join(NUMBERS[1:n + m + 1]) + "."],
            [f"{a.name} and {b.name} counted to {NUMBERS[n + m]} together: "
             + ", ".join(str(i) for i in range(1, n + m + 1)) + "."],
            [f"There were {NUMBERS[n + m]} {plural(obj)} on the table.",
             f"{b.name} took {NUMBERS[m]}.",
             f"Now there were {NUMBERS[n]} {plural(obj) if n > 1 else obj} left."],
        ]
        return self.pick(options)

    def a_list(self, a):
        items = self.r.sample(OBJECTS, self.r.randint(3, 5))
        place = self.pick(PLACES)
        options = [
            [f"{a.name} made a list of things to take to the {place}:"
             + "".join(f"\n{i + 1}. {article(x).capitalize()} {x}" for i, x in enumerate(items))],
            [f"In {a.his} bag, {a.name} had " + ", ".join(f"{article(x)} {x}" for x in items[:-1])
             + f" and {article(items[-1])} {items[-1]}."],
            [f"At the {place}, {a.name} saw {NUMBERS[len(items)]} things: "
             + ", ".join(items) + "."],
        ]
        return self.pick(options)

    def aside(self, a, b):
        obj, color, size = self.pick(OBJECTS), self.pick(COLORS), self.pick(SIZES)
        options = [
            f"{a.name} found a box ({article(size)} {size} box with {article(color)} {color} lid) under the bed.",
            f"{b.name} (who was {a.name}'s best friend) came to play.",
            f"They ran to the {self.pick(PLACES)} (it was not far) and looked for the {obj}.",
            f"{a.name} put the {obj} [the {color} one] in {a.his} pocket.",
            f"The {obj} (the {size} one, not the {self.pick(SIZES)} one) was {color}.",
        ]
        return [self.pick(options)]

    def bracket_game(self, a, b):
        game = self.brackets(3, self.r.randint(2, 5))
        return [f"{a.name} and {b.name} played the bracket game.",
                f"{a.name} wrote: {game}",
                self.pick([f"\"Every bracket has a friend,\" said {b.name}.",
                           f"{b.name} checked it and said, \"Yes, they all match!\""])]

    def secret_word(self, a, b):
        word = self.made_up_word()
        return [f"{a.name} said a funny word: \"{word}\".",
                self.pick([f"{b.name} laughed and said it back: \"{word}\".",
                           f"\"{word.capitalize()}!\" said {b.name}.",
                           f"{b.name} tried to say it too: \"{word}\"."]),
                self.pick([f"They said \"{word}\" again and again.", f"What a silly word!"])]

    def song(self, a):
        line = self.pick([f"la la la", f"one, two, three", f"hop and skip", f"sun and rain"])
        return [f"{a.name} sang a song: \"{line}, {line}, {line}!\""]

    def problem(self, a, b, pet):
        obj = self.pick(OBJECTS)
        place = self.pick(PLACES)
        return [f"Then {pet[0]} ran away with the {obj}!",
                f"\"Stop, {pet[0]}!\" said {a.name}.",
                f"{a.name} and {b.name} looked for {pet[0]} everywhere.",
                f"At last, they found {pet[0]} in the {place}.",
                f"{pet[0]} gave the {obj} back to {a.name}."]

    def ending(self, a, b):
        feel = self.pick(["happy", "proud", "tired", "glad"])
        return self.pick([
            [f"At the end of the day, {a.name} was very {feel}.", "The end."],
            [f"{a.name} and {b.name} were best friends.", f"They played together every day."],
            [f"{a.name} said, \"Thank you, {b.name}!\"", f"{b.name} smiled."],
            [f"That night, {a.name} went to bed and dreamed about the {self.pick(PLACES)}."],
        ])

    def story(self):
        a = self.character(())
        b = self.character((a.name,))
        pet = (self.pick(PET_NAMES), self.pick(ANIMALS))
        sentences = self.intro(a, pet) + self.meet(a, b)
        episodes = [lambda: self.dialogue(a, b), lambda: self.counting(a, b), lambda: self.a_list(a),
                    lambda: self.aside(a, b), lambda: self.bracket_game(a, b), lambda: self.secret_word(a, b),
                    lambda: self.song(a), lambda: self.problem(a, b, pet), lambda: self.dialogue(b, a),
                    lambda: self.counting(b, a)]
        for episode in self.r.sample(episodes, self.r.randint(2, 4)):
            sentences += episode()
        sentences += self.ending(a, b)
        text = sentences[0]
        for prev, s in zip(sentences, sentences[1:]):  # after a numbered list, a new line
            text += ("\n" if "\n" in prev else " ") + s
        return text


def write_split(path, seed, megabytes):
    writer = StoryWriter(random.Random(seed))
    size, limit = 0, int(megabytes * 1e6)
    with open(path, "w", encoding="ascii") as f:
        while size < limit:
            story = writer.story()
            assert "\n\n" not in story
            f.write(story + "\n\n")
            size += len(story) + 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--train-mb", type=float, default=24)
    ap.add_argument("--heldout-mb", type=float, default=1)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    write_split(os.path.join(args.out_dir, "train.txt"), args.seed, args.train_mb)
    write_split(os.path.join(args.out_dir, "heldout.txt"), args.seed + 1000, args.heldout_mb)


if __name__ == "__main__":
    main()
