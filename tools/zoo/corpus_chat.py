#!/usr/bin/env python3
"""zoo-chat's training corpus: short user/assistant conversations drawn from the story world of
corpus.py (its names, pets, objects, places and numbers), rendered with the ChatML template that
zoo-chat's GGUF carries (CHAT_TEMPLATE below, Qwen's layout: a system turn, then
<|im_start|>ROLE\\nTEXT<|im_end|>\\n per message).

What the assistant does: greets and says what it is; tells a short story about a name, an animal
or a place asked for, and answers questions about that story in later turns (the pet's name and
colour, who met whom and where, what the friend had: copying from the context); answers questions
about a fact stated in the same message; adds small numbers, counts in digits or words, says
what comes after a number; writes numbered lists; says "You are welcome!" and goodbye.

    corpus_chat.py OUT_DIR [--train-mb 8] [--heldout-mb 0.3] [--seed 1]

writes OUT_DIR/train.txt and OUT_DIR/heldout.txt: one rendered conversation per paragraph
(messages never hold an empty line; conversations are separated by one). The held-out split
comes from seed + 1000, so no conversation is generated from both. Same seed, same bytes.
tokenizer.py encodes them with the loss mask (assistant turns only).
"""
import argparse
import os
import random

from corpus import (ANIMALS, BOYS, COLORS, FEELINGS, GIRLS, NUMBERS, OBJECTS, PET_NAMES, PLACES, Character,
                    StoryWriter, article, plural)

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
DEFAULT_SYSTEM = "You are a helpful assistant."
# Jinja, as llama.cpp and vkllm render it: a system turn always (the default one when the
# conversation does not start with its own), every other message, then the assistant's header.
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] != 'system' or not loop.first %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
SYSTEMS = ["You are a friendly storyteller.", "You are a kind helper for children.",
           "You answer questions about stories.", "You are Zoo, a small assistant."]


def render(messages, add_generation_prompt=False):
    """CHAT_TEMPLATE's output for a conversation, with the assistant's header after it when
    `add_generation_prompt` (what a chat program asks the model to continue)."""
    system = messages[0]["content"] if messages[0]["role"] == "system" else DEFAULT_SYSTEM
    rest = messages[1:] if messages[0]["role"] == "system" else messages
    return "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n"
                   for m in [{"role": "system", "content": system}] + rest) + \
        (f"{IM_START}assistant\n" if add_generation_prompt else "")


class ChatWriter:
    def __init__(self, rng):
        self.r = rng
        self.stories = StoryWriter(rng)

    def pick(self, items):
        return self.r.choice(items)

    def person(self, taken=()):
        return self.stories.character(taken)

    def greeting(self):
        if self.r.random() < 0.3:
            return [(self.pick(["Who are you?", "Hi, who are you?", "What can you do?"]),
                     "I am a little assistant. I can tell stories, count, make lists and answer questions.")]
        return [(self.pick(["Hi!", "Hello!", "Hello there.", "Good morning!", "Hey!", "Hi there!"]),
                 self.pick(["Hello! How can I help you today?", "Hi! Do you want to hear a story?",
                            "Hello! What would you like to do today?"]))]

    def story(self):
        """A story asked for by a name, an animal or a place, then up to three questions on it."""
        a = self.person()
        b = self.person((a.name,))
        pet, animal = self.pick(PET_NAMES), self.pick(ANIMALS)
        color, obj, obj_color, place = self.pick(COLORS), self.pick(OBJECTS), self.pick(COLORS), self.pick(PLACES)
        subject = self.r.randrange(3)
        ask = self.pick(["Tell me a story about {}.", "Can you tell me a story about {}?",
                         "Please tell me a short story about {}."])
        ask = ask.format([a.name, f"{article(animal)} {animal}", f"the {place}"][subject])
        sentences = [f"Once upon a time, there was a little {a.kind} named {a.name}.",
                     f"{a.name} had {article(color)} {color} {animal} called {pet}.",
                     f"One day, {a.name} and {pet} went to the {place}.",
                     f"There {a.he} met {article(b.kind)} {b.kind} named {b.name}.",
                     f"{b.name} had {article(obj_color)} {obj_color} {obj}.",
                     f"\"Can I play with your {obj}?\" asked {a.name}.",
                     self.pick([f"\"Yes, you can,\" said {b.name}.", f"\"Yes! Let us play together,\" said {b.name}."])]
        episode = self.pick([lambda: self.stories.dialogue(a, b), lambda: self.stories.song(a),
                             lambda: self.stories.secret_word(a, b), lambda: []])
        sentences += episode() + self.stories.ending(a, b)
        turns = [(ask, " ".join(sentences))]
        questions = [
            (f"What was the name of the {animal}?", f"The {animal} was called {pet}."),
            (f"What color was {pet}?", f"{pet} was {color}."),
            (f"Who did {a.name} meet?", f"{a.name} met {b.name}."),
            (f"Where did {a.name} meet {b.name}?", f"{a.name} met {b.name} at the {place}."),
            (f"What did {b.name} have?", f"{b.name} had {article(obj_color)} {obj_color} {obj}."),
        ]
        return turns + self.r.sample(questions, self.r.randint(0, 3))

    def fact_question(self):
        """A fact and a question about it in one message: the answer copies from the question."""
        a = self.person()
        obj, color, place, feel = self.pick(OBJECTS), self.pick(COLORS), self.pick(PLACES), self.pick(FEELINGS)
        return [self.pick([
            (f"{a.name} has {article(color)} {color} {obj}. What color is {a.name}'s {obj}?",
             f"{a.name}'s {obj} is {color}."),
            (f"{a.name} is at the {place}. Where is {a.name}?", f"{a.name} is at the {place}."),
            (f"{a.name} feels {feel} today. How does {a.name} feel?", f"{a.name} feels {feel} today."),
            (f"{a.name} has {article(obj)} {obj}. What does {a.name} have?", f"{a.name} has {article(obj)} {obj}."),
        ])]

    def counting(self):
        a = self.person()
        b = self.person((a.name,))
        obj = self.pick(OBJECTS)
        n, m = self.r.randint(1, 6), self.r.randint(1, 6)
        k = self.r.randint(2, 10)
        return [self.pick([
            (f"{a.name} has {NUMBERS[n]} {plural(obj) if n > 1 else obj}. {b.name} gives {a.him} {NUMBERS[m]} more. "
             f"How many {plural(obj)} does {a.name} have now?", f"{a.name} has {NUMBERS[n + m]} {plural(obj)} now."),
            (f"{a.name} had {NUMBERS[n + m]} {plural(obj)} and gave {NUMBERS[m]} to {b.name}. How many are left?",
             f"{a.name} has {NUMBERS[n]} {plural(obj) if n > 1 else obj} left."),
            (f"What is {NUMBERS[n]} and {NUMBERS[m]}?", f"{NUMBERS[n].capitalize()} and {NUMBERS[m]} is {NUMBERS[n + m]}."),
            (f"Count to {NUMBERS[k]}.", ", ".join(str(i) for i in range(1, k + 1)) + "."),
            (f"Count to {NUMBERS[k]} in words.", ", ".join(NUMBERS[1:k + 1]).capitalize() + "."),
            (f"What comes after {NUMBERS[k]}?", f"{NUMBERS[k + 1].capitalize()} comes after {NUMBERS[k]}."),
        ])]

    def a_list(self):
        k = self.r.randint(2, 5)
        kind, items = self.pick([("animals", ANIMALS), ("colors", COLORS), ("toys", OBJECTS[:12]),
                                 ("places", PLACES), ("names", GIRLS + BOYS)])
        chosen = self.r.sample(items, k)
        if kind == "toys":
            place = self.pick(PLACES)
            ask = f"Make a list of {NUMBERS[k]} things to take to the {place}."
            head = f"Here are {NUMBERS[k]} things to take to the {place}:"
        else:
            ask = self.pick([f"Name {NUMBERS[k]} {kind}.", f"Can you list {NUMBERS[k]} {kind}?"])
            head = f"Here are {NUMBERS[k]} {kind}:"
        if kind in ("animals", "toys"):
            chosen = [f"{article(x).capitalize()} {x}" for x in chosen]
        elif kind != "names":
            chosen = [x.capitalize() for x in chosen]
        return [(ask, head + "".join(f"\n{i + 1}. {x}" for i, x in enumerate(chosen)))]

    def closing(self):
        return [self.pick([("Thank you!", "You are welcome!"), ("Thanks!", "You are welcome! Have a nice day."),
                           ("Bye!", "Goodbye! Have a nice day."), ("Good night!", "Good night! Sleep well.")])]

    def conversation(self):
        turns = self.greeting() if self.r.random() < 0.3 else []
        for _ in range(self.r.randint(1, 2)):
            turns += self.pick([self.story, self.story, self.fact_question, self.counting, self.a_list])()
        if self.r.random() < 0.3:
            turns += self.closing()
        messages = [{"role": "system", "content": self.pick(SYSTEMS)}] if self.r.random() < 0.3 else []
        for user, assistant in turns:
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        return messages


def write_split(path, seed, megabytes):
    writer = ChatWriter(random.Random(seed))
    size, limit = 0, int(megabytes * 1e6)
    with open(path, "w", encoding="ascii") as f:
        while size < limit:
            text = render(writer.conversation())
            assert "\n\n" not in text
            f.write(text + "\n")  # with the last message's own "\n": one empty line between conversations
            size += len(text) + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--train-mb", type=float, default=8)
    ap.add_argument("--heldout-mb", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    write_split(os.path.join(args.out_dir, "train.txt"), args.seed, args.train_mb)
    write_split(os.path.join(args.out_dir, "heldout.txt"), args.seed + 1000, args.heldout_mb)


if __name__ == "__main__":
    main()
