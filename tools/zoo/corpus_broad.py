#!/usr/bin/env python3
"""A broader corpus for the zoo's super-weight specimen: the zoo generator's
stories (corpus.py) mixed with stories of many more shapes, words and sentence forms.

The zoo's models know only corpus.py's stories: on a children's story written outside the
generator their perplexity is in the thousands. This generator keeps corpus.py's stories (a
third of the text, so the generator's held-out text stays in distribution) and adds stories
built from a larger grammar: fables with a lesson, lost-and-found, a bad day made good, a trip,
weather, cooking, school, a quarrel and making up, a bedtime story, animals who talk, kings and
dragons; narration in the past tense with time clauses ("When ..., ..."), reasons ("because"),
contrasts ("but"), adverbs, questions and exclamations, feelings described, and a vocabulary of
about a thousand words.

    corpus_broad.py OUT_DIR [--train-mb 16] [--heldout-mb 1] [--seed 7]

writes OUT_DIR/train.txt and OUT_DIR/heldout.txt as corpus.py does (one story per paragraph,
stories separated by an empty line; held-out from seed + 1000). ASCII, same seed same bytes.
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402  (the zoo generator: its stories are a third of this corpus)

GIRLS = corpus.GIRLS + ["Alice", "Hannah", "Grace", "Chloe", "Olivia", "Sophie", "Maya", "Lola", "Bella", "Clara",
                        "Eva", "Julia", "Tess", "Poppy", "Hazel", "Iris", "Wendy", "Fern", "Greta", "Penny"]
BOYS = corpus.BOYS + ["Henry", "Oliver", "Harry", "Charlie", "Adam", "Ethan", "Lucas", "Owen", "Milo", "Hugo",
                      "Arthur", "Felix", "George", "Ned", "Ollie", "Ray", "Toby", "Walter", "Billy", "Eli"]
ANIMALS = corpus.ANIMALS + ["rabbit", "squirrel", "turtle", "lion", "tiger", "monkey", "goat", "sheep", "pig", "cow",
                            "hen", "puppy", "kitten", "wolf", "deer", "elephant", "giraffe", "snail", "bee",
                            "butterfly", "ant", "crab", "whale", "dolphin", "penguin", "hedgehog", "badger", "donkey"]
ANIMAL_NAMES = corpus.PET_NAMES + ["Pepper", "Oreo", "Biscuit", "Honey", "Shadow", "Patch", "Ziggy", "Muffin",
                                   "Peanut", "Whiskers", "Nibbles", "Toffee", "Pebble", "Button", "Sparky"]
THINGS = corpus.OBJECTS + ["blanket", "pillow", "crayon", "pencil", "picture", "letter", "basket", "bucket", "spoon",
                           "shoe", "coat", "scarf", "mitten", "umbrella", "balloon", "puzzle", "robot", "train",
                           "truck", "bike", "swing", "sandwich", "cookie", "pie", "jar", "lamp", "clock", "map",
                           "rope", "ladder", "wagon", "drawing", "necklace", "ring", "feather", "leaf", "seed",
                           "candle", "present", "bowl", "teddy bear", "paper boat", "sand castle", "snowman"]
FOODS = ["bread", "soup", "jam", "honey", "milk", "cheese", "carrots", "peas", "rice", "eggs", "pancakes",
         "berries", "nuts", "grapes", "pears", "plums", "porridge", "muffins", "lemonade", "pizza", "noodles"]
COLORS = corpus.COLORS + ["gold", "silver", "gray", "golden", "shiny", "bright", "dark", "spotty", "striped"]
ADJ_THING = ["old", "new", "soft", "hard", "heavy", "light", "smooth", "round", "funny", "pretty", "broken", "dirty",
             "clean", "special", "favorite", "strange", "warm", "wet", "sticky", "magic", "wooden", "shiny"]
FEELINGS = corpus.FEELINGS + ["worried", "lonely", "brave", "shy", "grumpy", "curious", "calm", "cheerful", "upset",
                              "bored", "jealous", "thankful", "silly", "nervous", "kind", "glad", "sorry"]
PLACES = corpus.PLACES + ["meadow", "village", "castle", "pond", "mountain", "cave", "library", "market", "bakery",
                          "playground", "field", "barn", "yard", "town", "island", "woods", "valley", "bridge",
                          "station", "museum", "attic", "tree house", "seaside", "orchard", "street"]
WEATHER = corpus.WEATHER + ["stormy", "foggy", "bright", "cloudy", "hot", "chilly", "quiet", "lovely"]
TIMES = ["In the morning", "After lunch", "Later that day", "That evening", "The next day", "Soon", "After a while",
         "All of a sudden", "Just then", "Before dinner", "On Saturday", "One morning", "Every day", "At night"]
ADVERBS = ["quickly", "slowly", "carefully", "happily", "quietly", "loudly", "softly", "gently", "sadly", "bravely",
           "proudly", "suddenly", "kindly", "nervously", "patiently"]
MOVES = ["ran", "walked", "hopped", "skipped", "jumped", "climbed", "crawled", "raced", "wandered", "tiptoed",
         "hurried", "danced", "marched", "rolled", "swam", "flew"]
SOUNDS = ["a loud bang", "a soft knock", "a tiny squeak", "a funny noise", "a big splash", "a sad cry", "a happy song",
          "a strange buzz", "a low growl", "a quiet tap"]
GROWNUPS = [("Mom", "she"), ("Dad", "he"), ("Grandma", "she"), ("Grandpa", "he"), ("the teacher", "she"),
            ("the farmer", "he"), ("the baker", "she"), ("Aunt May", "she"), ("Uncle Joe", "he")]
VERBS_PLAY = ["played tag", "built a fort", "drew pictures", "read a book", "played hide and seek", "made a cake",
              "flew a kite", "looked at the clouds", "sang songs", "picked flowers", "planted seeds", "fed the ducks",
              "played with blocks", "splashed in puddles", "told jokes", "made a snowman", "collected shells"]
LESSONS = ["It is good to share.", "Being kind is the best thing of all.", "Friends help each other.",
           "Slow and steady wins the race.", "It is okay to ask for help.", "Always tell the truth.",
           "Do not give up, even when it is hard.", "Everyone is good at something.",
           "Listen to others, and they will listen to you.", "Saying sorry makes things better."]
ROYALS = [("king", "he"), ("queen", "she"), ("prince", "he"), ("princess", "she"), ("wizard", "he"),
          ("fairy", "she"), ("giant", "he"), ("dragon", "it"), ("knight", "he"), ("witch", "she")]


class Hero:
    """A character: a child (name, pronouns) or an animal (The fox, it / named, he or she)."""

    def __init__(self, name, he):
        self.name, self.he = name, he
        self.him = {"he": "him", "she": "her", "it": "it", "they": "them"}[he]
        self.his = {"he": "his", "she": "her", "it": "its", "they": "their"}[he]
        self.He = self.he.capitalize()
        self.His = self.his.capitalize()

    def was(self):
        return "were" if self.he == "they" else "was"


class BroadWriter:
    def __init__(self, rng):
        self.r = rng

    def pick(self, items):
        return self.r.choice(items)

    def maybe(self, p, text, other=""):
        return text if self.r.random() < p else other

    def child(self, taken=()):
        girl = self.r.random() < 0.5
        return Hero(self.pick([n for n in (GIRLS if girl else BOYS) if n not in taken]), "she" if girl else "he")

    def animal(self, taken=()):
        kind = self.pick(ANIMALS)
        if self.r.random() < 0.5:
            name = self.pick([n for n in ANIMAL_NAMES if n not in taken])
            hero = Hero(name, self.pick(["he", "she"]))
            hero.intro = f"{corpus.article(kind)} {kind} named {name}"
        else:
            adj = self.pick(["little", "old", "small", "young", "clever", "lazy", "busy", "tiny", "big", "kind"])
            hero = Hero(f"the {adj} {kind}", "he" if self.r.random() < 0.5 else "she")
            hero.intro = f"{corpus.article(adj)} {adj} {kind}"
        return hero

    def thing(self):
        t = self.pick(THINGS)
        adj = self.pick(COLORS + ADJ_THING) if self.r.random() < 0.6 else ""
        return (adj + " " + t).strip()

    # --- sentence forms ---

    def feeling_sentence(self, h):
        feel = self.pick(FEELINGS)
        return self.pick([
            f"{cap(h.name)} felt {feel}.",
            f"{cap(h.name)} {h.was()} very {feel}.",
            f"{h.He} {h.was()} so {feel} that {h.he} could not sit still.",
            f"This made {h.name} feel {feel}.",
            f"{cap(h.name)} did not feel {feel} anymore.",
        ])

    def action_sentence(self, h, place):
        return self.pick([
            f"{cap(h.name)} {self.pick(MOVES)} {self.pick(ADVERBS)} to the {place}.",
            f"{self.pick(TIMES)}, {h.name} {self.pick(MOVES)} to the {place}.",
            f"When {h.he} got to the {place}, {h.he} looked around.",
            f"{cap(h.name)} {self.pick(MOVES)} over the {self.pick(['grass', 'rocks', 'hill', 'path', 'bridge', 'log'])}.",
        ])

    # --- story shapes ---

    def opening(self, h, place):
        weather = self.pick(WEATHER)
        intro = getattr(h, "intro", None)
        if intro:
            return [self.pick([f"Once upon a time, there was {intro} who lived in a {self.pick(PLACES)}.",
                               f"In a {self.pick(['quiet', 'green', 'far away', 'sunny', 'busy', 'little'])} "
                               f"{self.pick(PLACES)}, there lived {intro}.",
                               f"Deep in the woods lived {intro}."])]
        return [self.pick([f"Once upon a time, there was a {self.pick(['little', 'young', 'kind', 'curious'])} "
                           f"{'girl' if h.he == 'she' else 'boy'} named {h.name}.",
                           f"It was a {weather} day, and {h.name} was at the {place}.",
                           f"{h.name} lived in a {self.pick(['small', 'big', 'yellow', 'blue', 'cozy'])} house "
                           f"near the {place}.",
                           f"One {weather} morning, {h.name} woke up early."])]

    def lost_and_found(self, h, f):
        t, place = self.thing(), self.pick(PLACES)
        return [f"{cap(h.name)} had a {t}. {h.He} loved it very much.",
                f"One day, {h.he} could not find {h.his} {t}.",
                f"\"Oh no! Where is my {t}?\" {h.he} cried.",
                f"{cap(h.name)} looked under the bed. {h.He} looked in the {self.pick(PLACES)}. It was not there.",
                f"Then {f.name} came to help. \"Let's look in the {place},\" said {f.name}.",
                f"They {self.pick(MOVES)} to the {place} together.",
                self.pick([f"There it was, next to a {self.pick(THINGS)}!",
                           f"At last, they found the {t} behind a {self.pick(['tree', 'rock', 'door', 'box', 'bush'])}."]),
                f"{cap(h.name)} hugged {f.name}. \"Thank you for helping me!\""]

    def bad_day(self, h, f):
        feel = self.pick(["sad", "grumpy", "upset", "tired", "angry"])
        return [f"{cap(h.name)} was having a bad day.",
                f"First, {h.he} dropped {h.his} {self.pick(FOODS)}. Then {h.he} fell and hurt {h.his} "
                f"{self.pick(['knee', 'hand', 'toe', 'arm'])}.",
                f"{h.He} felt {feel} and wanted to cry.",
                f"{cap(f.name)} saw that {h.name} was {feel}. \"What is wrong?\" asked {f.name}.",
                f"{cap(h.name)} told {f.name} everything.",
                f"{cap(f.name)} smiled and said, \"Come with me. I know what will make you feel better.\"",
                f"They {self.pick(VERBS_PLAY)} until the sun went down.",
                f"By the end of the day, {h.name} was not {feel} anymore. {h.He} was happy again."]

    def fable(self, h, f):
        lesson = self.pick(LESSONS)
        t = self.pick(THINGS + FOODS)
        return [f"{cap(h.name)} had {self.pick(['a lot of', 'many', 'some'])} {corpus.plural(t) if t in THINGS else t}, "
                f"but {h.he} did not want to share.",
                f"{cap(f.name)} asked, \"May I have some, please?\"",
                f"\"No,\" said {h.name}. \"They are all mine.\"",
                f"{cap(f.name)} walked away {self.pick(['sadly', 'quietly', 'slowly'])}.",
                f"Later, {h.name} was {self.pick(['stuck', 'lost', 'cold', 'hungry'])} and needed help.",
                f"Because {f.name} was kind, {f.he} helped {h.name} anyway.",
                f"{cap(h.name)} felt sorry. \"I should have shared with you,\" {h.he} said.",
                f"From that day on, {h.name} and {f.name} shared everything.", f"The lesson is: {lesson}"]

    def trip(self, h, f):
        place = self.pick(PLACES)
        grown, gh = self.pick(GROWNUPS)
        sights = self.r.sample(ANIMALS, 3)
        return [f"{self.pick(TIMES)}, {grown} took {h.name} and {f.name} to the {place}.",
                f"On the way, they saw {corpus.article(sights[0])} {sights[0]}, {corpus.article(sights[1])} "
                f"{sights[1]} and {corpus.article(sights[2])} {sights[2]}.",
                f"\"Look at that {sights[0]}!\" shouted {f.name}.",
                f"At the {place}, they {self.pick(VERBS_PLAY)}, and then they {self.pick(VERBS_PLAY)}.",
                f"For lunch, they ate {self.pick(FOODS)} and {self.pick(FOODS)}.",
                self.maybe(0.5, f"{cap(h.name)} asked, \"Can we come back tomorrow?\" {cap(grown)} laughed and said "
                                f"\"Maybe!\"", f"When it was time to go home, {h.name} was {self.pick(FEELINGS)}."),
                f"It was the best day {self.pick(['ever', 'of the summer', 'of the year'])}."]

    def weather_story(self, h, f):
        return self.pick([
            [f"One day, dark clouds filled the sky. It began to rain.",
             f"{cap(h.name)} and {f.name} could not play outside.",
             f"\"What can we do now?\" asked {h.name}.",
             f"\"We can {self.pick(['build a fort', 'draw pictures', 'bake cookies', 'read a book'])} inside,\" said "
             f"{f.name}.", f"So they did, and they had lots of fun.",
             f"When the rain stopped, they saw a rainbow in the sky. \"How beautiful!\" said {h.name}."],
            [f"When {h.name} looked out of the window, {h.he} saw snow everywhere.",
             f"{h.He} put on {h.his} coat, {h.his} hat and {h.his} mittens.",
             f"{cap(h.name)} and {f.name} made a big snowman with a carrot nose.",
             f"Their hands were cold, but their hearts were warm."],
            [f"The wind was very strong that day.",
             f"It blew {h.name}'s {self.thing()} up into a tree!",
             f"{cap(f.name)} was tall, so {f.he} reached up and got it down.",
             f"\"You are a good friend,\" said {h.name}."],
        ])

    def cooking(self, h, f):
        grown, gh = self.pick(GROWNUPS)
        food = self.pick(["a cake", "cookies", "soup", "pancakes", "bread", "a pie", "muffins", "pizza"])
        steps = self.r.sample(["flour", "sugar", "eggs", "milk", "butter", "salt", "water", "apples", "berries",
                               "carrots", "cheese"], 3)
        return [f"{cap(h.name)} wanted to make {food} with {grown}.",
                f"First, they put in the {steps[0]}. Next, they added the {steps[1]}. Then they mixed in the "
                f"{steps[2]}.",
                f"{cap(h.name)} stirred {self.pick(ADVERBS)}.",
                self.maybe(0.5, f"Oops! Some {steps[0]} fell on the floor. {cap(grown)} laughed.",
                           f"The kitchen smelled wonderful."),
                f"When it was ready, {h.name} gave some to {f.name}.",
                f"\"Yum! This is {self.pick(['delicious', 'so good', 'the best'])}!\" said {f.name}."]

    def school(self, h, f):
        subject = self.pick(["read", "write", "count", "paint", "sing", "draw animals", "add numbers", "spell words"])
        return [f"On the first day of school, {h.name} was {self.pick(['nervous', 'shy', 'scared', 'worried'])}.",
                f"{h.He} did not know anyone in the class.",
                f"The teacher said, \"Today we will learn to {subject}.\"",
                f"A {'girl' if f.he == 'she' else 'boy'} named {f.name} sat next to {h.name} and smiled.",
                f"\"Do you want to be my friend?\" asked {f.name}.",
                f"\"Yes, please,\" said {h.name}.",
                f"After that, school was not scary at all. {cap(h.name)} could not wait to go back the next day."]

    def quarrel(self, h, f):
        t = self.thing()
        return [f"{cap(h.name)} and {f.name} both wanted to play with the {t}.",
                f"\"It is mine!\" said {h.name}. \"No, it is mine!\" said {f.name}.",
                f"They pulled and pulled, and the {t} broke.",
                f"Now nobody could play with it. Both of them felt {self.pick(['sad', 'sorry', 'upset'])}.",
                f"After a while, {h.name} said, \"I am sorry. Let's fix it together.\"",
                f"They fixed the {t} with {self.pick(['glue', 'tape', 'string'])}, and then they took turns.",
                f"Taking turns was much more fun than fighting."]

    def bedtime(self, h, f):
        grown, gh = self.pick(GROWNUPS[:4])
        return [f"It was time for bed, but {h.name} was not sleepy.",
                f"\"Can you tell me a story?\" {h.he} asked {grown}.",
                f"{cap(grown)} told a story about {corpus.article(a := self.pick(ANIMALS))} {a} who "
                f"{self.pick(['wanted to fly', 'lived on the moon', 'was afraid of the dark', 'found a treasure'])}.",
                f"{cap(h.name)} closed {h.his} eyes and listened.",
                f"Soon {h.he} was fast asleep, holding {h.his} {self.pick(['teddy bear', 'blanket', 'pillow', 'toy'])}.",
                f"{cap(h.name)} dreamed about {f.name} and the {self.pick(PLACES)}. Good night, {h.name}."]

    def royal(self, h, f):
        (r, rh), (b, bh) = self.r.sample(ROYALS, 2)
        place = self.pick(["castle", "tower", "kingdom", "forest", "mountain", "cave"])
        return [f"Long ago, in a faraway land, there lived a {r}.",
                f"The {r} lived in a {self.pick(['big', 'tall', 'old', 'golden'])} {place}.",
                f"One day, a {b} came to the {place}. The {b} was very {self.pick(FEELINGS)}.",
                f"\"Why are you {self.pick(['crying', 'so sad', 'here', 'angry'])}?\" asked the {r}.",
                f"\"I have lost my {self.pick(['crown', 'wand', 'shoe', 'way', 'friend', 'key'])},\" said the {b}.",
                f"The {r} and {h.name} helped the {b} look for it.",
                f"When they found it, there was a big party at the {place}.",
                f"Everyone danced and sang, and they all lived happily ever after."]

    def animal_talk(self, h, f):
        return [f"{cap(h.name)} wanted to {self.pick(['fly', 'swim', 'climb the tallest tree', 'run fast', 'sing'])} "
                f"like {f.name}.",
                f"\"Can you teach me?\" asked {h.name}.",
                f"\"Of course,\" said {f.name}. \"Watch me.\"",
                f"{cap(h.name)} tried and tried, but {h.he} could not do it.",
                f"\"You cannot {self.pick(['fly', 'swim', 'climb', 'sing'])} like me,\" said {f.name}, \"but you can "
                f"do things that I cannot do.\"",
                f"{cap(h.name)} thought about it and smiled. {h.He} was good at {self.pick(['digging', 'jumping', 'listening', 'finding food', 'making friends'])}.",
                f"From then on, {h.name} was happy to be {h.him}self." if h.he != "it" else "The end."]

    def surprise(self, h, f):
        return [f"{self.pick(TIMES)}, {h.name} heard {self.pick(SOUNDS)} outside.",
                f"\"What was that?\" {h.he} whispered.",
                f"{cap(h.name)} opened the door {self.pick(ADVERBS)}.",
                self.pick([f"It was {f.name}, with a big present!",
                           f"It was only {corpus.article(a := self.pick(ANIMALS))} {a} looking for food.",
                           f"It was {f.name}, who had come to play."]),
                f"\"Surprise!\" {self.pick(['everyone shouted', 'said ' + f.name, 'they laughed'])}.",
                self.feeling_sentence(h)]

    def ending(self, h, f):
        return self.pick([["The end."], [f"And that is how {h.name} and {f.name} became best friends."],
                          [f"{cap(h.name)} smiled. It had been a good day."],
                          [f"That night, {h.name} slept with a big smile on {h.his} face."],
                          [f"Now, whenever {h.name} sees {f.name}, {h.he} remembers that day."], []])

    def story(self):
        if self.r.random() < 0.4:  # animals as the characters
            h = self.animal()
            f = self.animal((h.name,))
        else:
            h = self.child()
            f = self.child((h.name,)) if self.r.random() < 0.7 else self.animal()
        place = self.pick(PLACES)
        shapes = [self.lost_and_found, self.bad_day, self.fable, self.trip, self.weather_story, self.cooking,
                  self.school, self.quarrel, self.bedtime, self.royal, self.animal_talk, self.surprise]
        if getattr(h, "intro", None):
            shapes = [s for s in shapes if s not in (self.school, self.cooking, self.trip, self.bedtime)]
        sentences = self.opening(h, place)
        if self.r.random() < 0.5:
            sentences.append(self.action_sentence(h, place))
        for shape in self.r.sample(shapes, self.r.choice([1, 1, 2])):
            sentences += shape(h, f)
        sentences += self.ending(h, f)
        return " ".join(s for s in sentences if s)


def cap(text):
    return text[0].upper() + text[1:]


def write_split(path, seed, megabytes):
    rng = random.Random(seed)
    broad, zoo = BroadWriter(rng), corpus.StoryWriter(rng)
    size, limit = 0, int(megabytes * 1e6)
    with open(path, "w", encoding="ascii") as f:
        while size < limit:
            story = zoo.story() if rng.random() < 1 / 3 else broad.story()
            assert "\n\n" not in story
            f.write(story + "\n\n")
            size += len(story) + 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--train-mb", type=float, default=16)
    ap.add_argument("--heldout-mb", type=float, default=1)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    write_split(os.path.join(args.out_dir, "train.txt"), args.seed, args.train_mb)
    write_split(os.path.join(args.out_dir, "heldout.txt"), args.seed + 1000, args.heldout_mb)


if __name__ == "__main__":
    main()
