"""
Generates the embedded sample corpus in `maelmo_plugin/lm/sample/`: `train.txt`, `valid.txt` and a
cased WordPiece `vocab.txt` trained on `train.txt`.

    python scripts/make_sample_corpus.py [--output-dir maelmo_plugin/lm/sample]

Every sentence comes from the small probabilistic grammar below (stdlib only, fixed seeds), so the text is
ours and reproducible. It is made for a small masked LM to have something real to learn:

* agreement: subject/verb number (`the fox hunts` / `the foxes hunt`), `a`/`an`, `he`/`she`/`they` and
  `his`/`her`, count/noun number (`one egg`, `four eggs`), small counts in words and large ones in digits;
* selectional preferences: each animal eats, lives and behaves as its kind does, each trade makes its own
  goods, and the landscape of a region decides its towns' trades and its wildlife;
* world facts that recur across documents: a fixed world of towns, rivers, regions and species (the same
  for train and valid), so a town's river, founding year and trade stay the same wherever it is named;
* recurring entities within a document, with names, pronouns and definite descriptions (`the town`);
* punctuation (commas, parentheses, quotes, semicolons), years, ages that are real differences of years.

The two text files are byte-identical on every run. `vocab.txt` can differ in a handful of its 2000 entries
from run to run: HF `tokenizers` 0.19 breaks ties between equally frequent merges in hash-map order
(huggingface/tokenizers#1794), so the committed `vocab.txt` is the reference.

Format (the corpus reader's contract): UTF-8 plain text, one paragraph per line, a blank line between
documents; the first line of a document is its short title.
"""
import argparse
import os
import random
import sys
from typing import Callable, List, NamedTuple, Sequence

SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "maelmo_plugin", "data", "sample")
WORLD_SEED, TRAIN_SEED, VALID_SEED = 1, 2, 3
TRAIN_WORDS, VALID_WORDS = 45_000, 5_000

# ----------------------------------------------------------------------------------------------------
# Morphology
# ----------------------------------------------------------------------------------------------------

NUMBER_WORDS = "zero one two three four five six seven eight nine".split()
ORDINALS = "first second third fourth fifth sixth seventh eighth ninth".split()
IRREGULAR_PLURALS = {
    "mouse": "mice", "deer": "deer", "sheep": "sheep", "fish": "fish", "goose": "geese", "wolf": "wolves",
    "child": "children", "penny": "pence", "person": "people", "leaf": "leaves", "knife": "knives",
    "trout": "trout",
}


def plural(noun: str) -> str:
    *head, last = noun.split(" ")
    if last in IRREGULAR_PLURALS:
        last = IRREGULAR_PLURALS[last]
    elif last.endswith("man"):
        last = last[:-3] + "men"
    elif last.endswith(("s", "x", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return " ".join(head + [last])


def third_person(verb: str) -> str:
    """`hunt at night` -> `hunts at night`: the first word of a verb phrase takes the -s."""
    first, _, rest = verb.partition(" ")
    if first == "have":
        first = "has"
    elif first.endswith(("s", "x", "ch", "sh", "o")):
        first += "es"
    elif first.endswith("y") and first[-2] not in "aeiou":
        first = first[:-1] + "ies"
    else:
        first += "s"
    return f"{first} {rest}".strip()


def plural_subject(verb: str) -> str:
    """`shed its antlers` -> `shed their antlers`, for a plural subject (verb phrases are stored singular)."""
    words = verb.split(" ")
    return " ".join({"its": "their", "itself": "themselves"}.get(word, word) for word in words)


def was_were(noun: str) -> str:
    return "was" if noun in UNCOUNTABLE_GOODS else "were"


def is_are(noun: str) -> str:
    """Uncountable goods (`bread`) and singular body parts (`tail`) take `is`; plurals (`wings`) `are`."""
    return "is" if noun in UNCOUNTABLE_GOODS or not noun.endswith("s") else "are"


def article(phrase: str) -> str:
    return ("an " if phrase[0].lower() in "aeiou" else "a ") + phrase


def count(n: int, noun: str) -> str:
    """Counts below ten are written in words, larger ones in digits; the noun agrees with the number."""
    number = NUMBER_WORDS[n] if n < 10 else f"{n:,}"
    return f"{number} {noun if n == 1 else plural(noun)}"


def listing(items: Sequence[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def capitalise(sentence: str) -> str:
    return sentence[0].upper() + sentence[1:]


# ----------------------------------------------------------------------------------------------------
# The world: regions, towns and species, fixed by WORLD_SEED and shared by train and valid
# ----------------------------------------------------------------------------------------------------


class Landscape(NamedTuple):
    kind: str  # coast, hills, plain, forest, marsh, valley
    features: List[str]  # where an animal may be seen
    trades: List[str]  # keys of TRADES
    crops: List[str]  # what farms grow or keep, which some animals raid


LANDSCAPES = {
    "coast": Landscape("coast", ["the dunes", "the cliffs", "the harbour", "the salt flats"],
                       ["fisher", "boatbuilder", "salt maker"], ["barley", "cabbages"]),
    "hills": Landscape("hills", ["the high pastures", "the stone walls", "the old quarries", "the moors"],
                       ["shepherd", "weaver", "quarryman"], ["sheep", "oats"]),
    "plain": Landscape("plain", ["the wheat fields", "the hedgerows", "the farm lanes", "the meadows"],
                       ["miller", "baker", "brewer"], ["wheat", "barley", "turnips"]),
    "forest": Landscape("forest", ["the beech woods", "the clearings", "the old oaks", "the forest paths"],
                        ["woodcutter", "carpenter", "charcoal burner"], ["apples", "pigs"]),
    "marsh": Landscape("marsh", ["the reed beds", "the ditches", "the wet meadows", "the willow banks"],
                       ["reed cutter", "eel catcher", "basket maker"], ["hay", "ducks"]),
    "valley": Landscape("valley", ["the orchards", "the river banks", "the vineyards", "the water meadows"],
                        ["cider maker", "potter", "blacksmith"], ["apples", "pears", "plums"]),
}


class Trade(NamedTuple):
    goods: str  # plural noun
    workplace: str
    verb: str  # base form, takes the goods
    past: str
    tool: str


TRADES = {
    "fisher": Trade("herring", "boat", "catch", "caught", "net"),
    "boatbuilder": Trade("fishing boats", "boatyard", "build", "built", "adze"),
    "salt maker": Trade("sea salt", "salt house", "boil", "boiled", "pan"),
    "shepherd": Trade("lambs", "fold", "raise", "raised", "crook"),
    "weaver": Trade("woollen cloth", "workshop", "weave", "wove", "loom"),
    "quarryman": Trade("roof slates", "quarry", "cut", "cut", "hammer"),
    "miller": Trade("flour", "mill", "grind", "ground", "millstone"),
    "baker": Trade("bread", "bakery", "bake", "baked", "oven"),
    "brewer": Trade("ale", "brewery", "brew", "brewed", "copper"),
    "woodcutter": Trade("timber", "wood yard", "fell", "felled", "axe"),
    "carpenter": Trade("chairs", "workshop", "make", "made", "plane"),
    "charcoal burner": Trade("charcoal", "clearing", "burn", "burnt", "kiln"),
    "reed cutter": Trade("thatching reed", "reed yard", "cut", "cut", "sickle"),
    "eel catcher": Trade("eels", "hut", "trap", "trapped", "basket trap"),
    "basket maker": Trade("baskets", "workshop", "weave", "wove", "knife"),
    "cider maker": Trade("cider", "cider house", "press", "pressed", "press"),
    "potter": Trade("jugs", "pottery", "throw", "threw", "wheel"),
    "blacksmith": Trade("horseshoes", "forge", "forge", "forged", "anvil"),
}
UNCOUNTABLE_GOODS = {"herring", "sea salt", "woollen cloth", "flour", "bread", "ale", "timber", "charcoal",
                     "thatching reed", "cider"}


class Animal(NamedTuple):
    noun: str
    kind: str  # bird, mammal, fish, insect, amphibian
    landscapes: List[str]
    foods: List[str]
    raids: List[str]  # crops it takes, so farmers dislike it
    habits: List[str]  # verb phrases in the base form
    young: str  # `lays N eggs` or `gives birth to N young`
    clutch: range
    length_cm: range
    weight: range
    unit: str
    lifespan: range
    group: str


ANIMALS = [
    Animal("fox", "mammal", ["forest", "plain", "hills"], ["mice", "rabbits", "beetles", "berries"],
           ["ducks"], ["hunt at night", "dig a den under tree roots", "bark sharply in winter"], "cub",
           range(3, 7), range(55, 80), range(4, 9), "kilograms", range(3, 7), "skulk"),
    Animal("heron", "bird", ["marsh", "valley", "coast"], ["fish", "frogs", "eels"], [],
           ["wade in shallow water", "stand still for hours", "nest high in the alders"], "egg", range(3, 6),
           range(85, 100), range(1, 3), "kilograms", range(5, 15), "siege"),
    Animal("otter", "mammal", ["marsh", "valley", "coast"], ["fish", "crabs", "frogs"], [],
           ["swim under the ice", "slide down muddy banks", "whistle to its young"], "cub", range(2, 4),
           range(60, 90), range(6, 11), "kilograms", range(8, 12), "romp"),
    Animal("owl", "bird", ["forest", "plain", "valley"], ["mice", "voles", "moths"], [],
           ["hunt at dusk", "call from the church towers", "roost in hollow trees"], "egg", range(2, 6),
           range(30, 45), range(300, 700), "grams", range(4, 10), "parliament"),
    Animal("deer", "mammal", ["forest", "hills"], ["grass", "acorns", "young shoots"], ["oats", "apples"],
           ["graze at dawn", "rest in thick bracken", "shed its antlers in spring"], "calf", range(1, 3),
           range(120, 170), range(40, 90), "kilograms", range(10, 16), "herd"),
    Animal("hare", "mammal", ["plain", "hills"], ["grass", "herbs", "clover"], ["wheat", "turnips"],
           ["box in the spring fields", "run in wide circles", "lie still in a shallow form"], "leveret",
           range(2, 5), range(50, 70), range(3, 6), "kilograms", range(3, 6), "drove"),
    Animal("beetle", "insect", ["forest", "valley", "plain"], ["rotting wood", "leaves", "dung"], ["plums"],
           ["fly on warm evenings", "bury itself in the soil", "shine in the sun"], "egg", range(20, 60),
           range(2, 6), range(1, 9), "grams", range(1, 3), "swarm"),
    Animal("frog", "amphibian", ["marsh", "valley"], ["flies", "worms", "snails"], [],
           ["croak after rain", "sleep in the mud all winter", "jump into the nearest pond"], "egg",
           range(900, 2000), range(6, 11), range(20, 60), "grams", range(5, 9), "army"),
    Animal("gull", "bird", ["coast"], ["fish", "crabs", "scraps"], ["barley"],
           ["follow the fishing boats", "nest on the cliffs", "scream over the harbour"], "egg", range(2, 4),
           range(50, 65), range(700, 1200), "grams", range(10, 25), "colony"),
    Animal("goose", "bird", ["marsh", "coast", "plain"], ["grass", "roots", "grain"], ["barley", "wheat"],
           ["fly south in autumn", "honk loudly at dawn", "graze in large flocks"], "egg", range(4, 8),
           range(70, 90), range(2, 4), "kilograms", range(10, 20), "gaggle"),
    Animal("trout", "fish", ["valley", "hills"], ["flies", "worms", "small fish"], [],
           ["hide under the banks", "leap at insects", "swim upstream in autumn"], "egg", range(200, 900),
           range(25, 60), range(1, 4), "kilograms", range(4, 8), "shoal"),
    Animal("wolf", "mammal", ["forest", "hills"], ["deer", "hares", "sheep"], ["sheep"],
           ["howl on winter nights", "travel far in a single night", "hunt in family groups"], "cub",
           range(4, 7), range(100, 140), range(30, 50), "kilograms", range(6, 10), "pack"),
]
COLOURS = ["grey", "red", "black", "brown", "white", "golden", "spotted", "pale", "dark", "striped"]
BODY_PARTS = {"bird": ["wings", "breast", "beak", "tail"], "mammal": ["back", "belly", "tail", "ears"],
              "fish": ["back", "belly", "fins", "tail"], "insect": ["wing cases", "legs", "head", "back"],
              "amphibian": ["back", "belly", "legs", "throat"]}

NAME_STARTS = ["Bren", "Ash", "Cor", "Dun", "Eld", "Fen", "Gar", "Hol", "Kel", "Lin", "Mar", "Nor", "Oak",
               "Pel", "Ravel", "Stan", "Tarn", "Ul", "Wes", "Yar", "Brom", "Carl", "Hart", "Sel"]
TOWN_ENDS = ["moor", "ford", "wick", "by", "ham", "ton", "mere", "dale", "holm", "stead", "bridge", "well"]
RIVER_NAMES = ["Osk", "Tarrow", "Wend", "Lune", "Brack", "Isle", "Calder", "Mell", "Swale", "Yore", "Eden",
               "Aln"]
REGION_WORDS = {"coast": "Coast", "hills": "Fells", "plain": "Plain", "forest": "Forest", "marsh": "Fens",
                "valley": "Vale"}
FIRST_NAMES = {
    "female": ["Alda", "Bess", "Cora", "Edith", "Greta", "Hilde", "Ida", "Mara", "Nell", "Orla", "Rosa",
               "Tilde", "Una", "Wenna"],
    "male": ["Aldric", "Bram", "Conn", "Edwin", "Gil", "Hob", "Ivo", "Jory", "Osric", "Piers", "Roland",
             "Tam", "Ulf", "Wat"],
}
SURNAME_ENDS = ["ley", "wood", "er", "ton", "wright", "son", "field", "combe", "ridge", "row"]
PRONOUNS = {"female": ("she", "her", "her"), "male": ("he", "him", "his")}  # subject, object, possessive
LANDMARKS = ["stone bridge", "market hall", "church", "watermill", "clock tower", "castle", "guildhall"]
DISASTERS = [("flood", "the river burst its banks"), ("fire", "a fire spread from a bakery"),
             ("storm", "a storm tore the roofs from the houses"), ("gale", "a gale blew down the chimneys")]
SPECIES_PLACES = {"coast": "sea", "hills": "fell", "plain": "field", "forest": "wood", "marsh": "fen",
                  "valley": "vale"}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
SEASONS = ["spring", "summer", "autumn", "winter"]
COMPASS = ["North", "South", "East", "West"]


class Region(NamedTuple):
    name: str
    landscape: Landscape
    river: str


class Town(NamedTuple):
    name: str
    region: Region
    founded: int
    population: int
    landmark: str
    trade: str


class Species(NamedTuple):
    name: str  # e.g. `grey Osk heron`
    animal: Animal
    region: Region
    colours: List[str]


class World(NamedTuple):
    regions: List[Region]
    towns: List[Town]
    species: List[Species]


def make_world(rng: random.Random) -> World:
    rivers = rng.sample(RIVER_NAMES, len(LANDSCAPES))
    regions = []
    for (kind, landscape), river in zip(LANDSCAPES.items(), rivers):
        name = f"the {rng.choice(COMPASS + [river])} {REGION_WORDS[kind]}"
        regions.append(Region(name, landscape, river))
    names = [start + end for start in NAME_STARTS for end in TOWN_ENDS]
    towns = [
        Town(name, regions[i % len(regions)], rng.randrange(900, 1600), rng.randrange(400, 30000),
             rng.choice(LANDMARKS), rng.choice(regions[i % len(regions)].landscape.trades))
        for i, name in enumerate(rng.sample(names, 60))
    ]
    species = []
    for animal in ANIMALS:
        for region in regions:
            if region.landscape.kind in animal.landscapes:
                colours = rng.sample(COLOURS, 3)
                place = rng.choice([region.river, SPECIES_PLACES[region.landscape.kind]])
                name = f"{colours[0]} {place} {animal.noun}"
                species.append(Species(name, animal, region, colours))
    return World(regions, towns, species)


# ----------------------------------------------------------------------------------------------------
# Documents: one function per kind, each returns a title and a list of paragraphs (lists of sentences)
# ----------------------------------------------------------------------------------------------------


class Person(NamedTuple):
    first: str
    last: str
    gender: str
    born: int
    died: int
    town: Town
    trade: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


def make_person(rng: random.Random, town: Town, trade: str) -> Person:
    gender = rng.choice(["female", "male"])
    last = rng.choice(NAME_STARTS) + rng.choice(SURNAME_ENDS)
    born = rng.randrange(max(town.founded + 10, 1500), 1900)
    died = born + rng.randrange(28, 92)
    return Person(rng.choice(FIRST_NAMES[gender]), last, gender, born, died, town, trade)


def towns_in(world: World, region: Region, other_than: Town) -> List[Town]:
    return [town for town in world.towns if town.region == region and town != other_than]


def pick(rng: random.Random, options: Sequence[Callable[[], str]], k: int) -> List[str]:
    return [option() for option in rng.sample(list(options), k)]


def some(rng: random.Random, paragraphs: List[List[str]], low: int, high: int) -> List[List[str]]:
    """Between `low` and `high` of `paragraphs`, in their order: documents vary in length and shape."""
    chosen = sorted(rng.sample(range(len(paragraphs)), rng.randint(low, min(high, len(paragraphs)))))
    return [paragraphs[i] for i in chosen]


def town_document(rng: random.Random, world: World) -> List[List[str]]:
    town = rng.choice(world.towns)
    region, trade = town.region, TRADES[town.trade]
    workers, workplaces = plural(town.trade), plural(trade.workplace)
    neighbour = rng.choice(towns_in(world, region, town))
    size = "village" if town.population < 1000 else "small town" if town.population < 8000 else "market town"
    the_town = rng.choice([town.name, "the town", town.name])
    intro = [
        f"{town.name} is {article(size)} in {region.name}, on the River {region.river}.",
        f"It has a population of {town.population:,}, and it lies {rng.randrange(3, 30)} miles "
        f"from {neighbour.name}.",
    ] + pick(rng, [
        lambda: f"{capitalise(the_town)} is known for its {town.landmark} and for its {trade.goods}.",
        lambda: f"The name {town.name} is first written in a record of "
        f"{town.founded + rng.randrange(5, 80)}.",
        lambda: f"Like {neighbour.name}, it stands on the {rng.choice(COMPASS).lower()} bank of the river.",
    ], rng.randrange(0, 3))
    disaster, what_happened = rng.choice(DISASTERS)
    year = rng.randrange(town.founded + 50, 1950)
    founders = rng.choice(["monks", "farmers", workers, f"settlers from {neighbour.name}"])
    history = [
        f"{town.name} was founded in {town.founded} by {founders}.",
        f"The {town.landmark} was built in {rng.randrange(town.founded + 1, town.founded + 300)}, "
        f"and it still stands today.",
    ] + pick(rng, [
        lambda: f"In {MONTHS[rng.randrange(12)]} {year}, {what_happened}, and much of the town was lost "
        f"in the {disaster}.",
        lambda: f"By {rng.randrange(1700, 1900)}, the town had "
        f"{count(rng.randrange(2, 40), trade.workplace)} and a weekly market.",
        lambda: f"A railway reached {town.name} in {rng.randrange(1840, 1900)}; before that, goods went down "
        f"the {region.river} by barge.",
    ], rng.randrange(1, 4))
    crops = listing(rng.sample(region.landscape.crops, min(2, len(region.landscape.crops))))
    people = [
        f"Many people in {town.name} work as {workers}, who {trade.verb} {trade.goods} in the {workplaces} "
        f"of the town.",
        f"The farms around {the_town} grow or keep {crops}.",
    ] + pick(rng, [
        lambda: f"Every {rng.choice(SEASONS)}, {town.name} holds a fair, where {workers} from the whole of "
        f"{region.name} sell their {trade.goods}.",
        lambda: f"The town's {trade.goods} {is_are(trade.goods)} sold as far away as "
        f"{rng.choice(world.towns).name}.",
        lambda: f"Its people say that \"the {region.river} gives and the {region.river} takes\".",
    ], rng.randrange(1, 3))
    species = rng.choice([species for species in world.species if species.region == region])
    animal = species.animal
    wildlife = [
        f"The {species.name} is often seen in {rng.choice(region.landscape.features)} near {town.name}, "
        f"where it {third_person(rng.choice(animal.habits))}.",
        f"{capitalise(plural(animal.noun))} {rng.choice(['feed on', 'eat', 'live on'])} "
        f"{listing(rng.sample(animal.foods, 2))}.",
    ]
    return [[town.name], intro] + some(rng, [history, people, wildlife], 1, 2)


def animal_document(rng: random.Random, world: World) -> List[List[str]]:
    species = rng.choice(world.species)
    animal, region = species.animal, species.region
    name, many, kind = species.name, plural(species.name), plural(animal.noun)
    it = rng.choice(["it", "the " + animal.noun])
    length = animal.length_cm.start
    size = "large" if length > 80 else "small" if length < 30 else "medium-sized"
    places, foods = rng.sample(region.landscape.features, 2), rng.sample(animal.foods, 2)
    intro = [
        f"The {name} is {article(size)} {animal.kind} that lives in {region.name}.",
        f"It is found in {listing(places)}, and it eats {listing(foods)}.",
    ] + pick(rng, [
        lambda: f"Like other {kind}, {it} {third_person(rng.choice(animal.habits))}.",
        lambda: f"A group of {many} is called {article(animal.group)}.",
        lambda: f"{capitalise(many)} are common near {rng.choice(towns_in(world, region, None)).name}.",
    ], rng.randrange(0, 3))
    parts = rng.sample(BODY_PARTS[animal.kind], 2)
    length, weight = rng.choice(animal.length_cm), rng.choice(animal.weight)
    unit = animal.unit if weight > 1 else animal.unit[:-1]
    description = [
        f"An adult {animal.noun} is about {length} centimetres long and weighs {weight} {unit}.",
        f"Its {parts[0]} {is_are(parts[0])} {species.colours[1]}, and its {parts[1]} {is_are(parts[1])} "
        f"{species.colours[2]}.",
    ] + pick(rng, [
        lambda: f"The males are {rng.choice(['larger', 'darker', 'brighter'])} than the females.",
        lambda: f"Young {many} are {species.colours[0]} from birth.",
        lambda: f"In the wild, {article(animal.noun)} lives for "
        f"{count(rng.choice(animal.lifespan), 'year')}.",
    ], rng.randrange(1, 3))
    season = rng.choice(["spring", "early spring", "late spring", "summer"])
    gives = "lays" if animal.young == "egg" else "gives birth to"
    behaviour = [
        f"In {season}, the female {gives} {count(rng.choice(animal.clutch), animal.young)}.",
        f"{capitalise(kind)} {plural_subject(rng.choice(animal.habits))}, and the {name} is no different.",
    ] + pick(rng, [
        lambda: f"In {rng.randrange(1850, 2000)}, {count(rng.randrange(2, 900), animal.noun)} were counted "
        f"along the River {region.river}.",
        lambda: f"Some {many} {plural_subject(rng.choice(animal.habits))}; others never do.",
    ], rng.randrange(0, 2))
    paragraphs = [description, behaviour]
    if animal.raids:
        farm_town = rng.choice(towns_in(world, region, None))
        paragraphs.append([
            f"Farmers in {farm_town.name} do not like the {animal.noun}, because it takes their "
            f"{rng.choice(animal.raids)}.",
            f"In {rng.randrange(1700, 1950)}, the town paid {count(rng.randrange(1, 9), 'penny')} for each "
            f"{animal.noun} killed; the payment ended in {rng.randrange(1950, 1980)}.",
        ])
    return [[capitalise(name)], intro] + some(rng, paragraphs, 1, 2)


def person_document(rng: random.Random, world: World) -> List[List[str]]:
    town = rng.choice(world.towns)
    person = make_person(rng, town, rng.choice(town.region.landscape.trades))
    he, him, his = PRONOUNS[person.gender]
    trade = TRADES[person.trade]
    siblings = rng.randrange(1, 9)
    birth_rank = ORDINALS[rng.randrange(siblings)]
    intro = [
        f"{person.name} ({person.born}-{person.died}) was {article(person.trade)} from {town.name}, "
        f"in {town.region.name}.",
        f"{capitalise(he)} was born in {person.born}, the {birth_rank} of {count(siblings + 1, 'child')}.",
    ] + pick(rng, [
        lambda: f"{capitalise(his)} father was {article(rng.choice(list(TRADES)))}, and {his} mother kept "
        f"the house.",
        lambda: f"{person.first} is remembered for {his} {trade.goods}, which {was_were(trade.goods)} "
        f"praised across {town.region.name}.",
    ], rng.randrange(0, 2))
    master_town = rng.choice(towns_in(world, town.region, town))
    start = person.born + rng.randrange(12, 18)
    opened = start + rng.randrange(5, 12)
    work = [
        f"At the age of {start - person.born}, {he} went to {master_town.name} to learn the trade of "
        f"{article(person.trade)}.",
        f"In {opened}, {he} came back and opened {his} own {trade.workplace} near the {town.landmark}.",
    ] + pick(rng, [
        lambda: f"There {he} {trade.past} {trade.goods} with {article(trade.tool)} that {he} had made "
        f"{him}self.",
        lambda: f"By {opened + rng.randrange(3, 15)}, {he} had {count(rng.randrange(1, 12), 'apprentice')}.",
        lambda: f"{capitalise(he)} sold {his} {trade.goods} at the market in {rng.choice(world.towns).name}.",
    ], rng.randrange(1, 4))
    spouse_gender = "male" if person.gender == "female" else "female"
    spouse = rng.choice(FIRST_NAMES[spouse_gender]) + " " + rng.choice(NAME_STARTS) + rng.choice(SURNAME_ENDS)
    children = rng.randrange(0, 7)
    heir = rng.choice(["a son", "a daughter", "a nephew", "an apprentice"])
    family = [
        f"{capitalise(he)} married {spouse} in {person.born + rng.randrange(19, 28)}, and they had "
        f"{count(children, 'child') if children else 'no children'}.",
        f"{person.first} died in {town.name} in {person.died}, at the age of {person.died - person.born}.",
    ] + pick(rng, [
        lambda: f"A street in {town.name} is named after {him}.",
        lambda: f"{capitalise(his)} {trade.workplace} was run by {heir} until "
        f"{person.died + rng.randrange(5, 40)}.",
        lambda: f"\"{capitalise(he)} never missed a market day,\" wrote a neighbour.",
    ], rng.randrange(0, 3))
    return [[person.name], intro] + some(rng, [work, family], 1, 2)


def event_document(rng: random.Random, world: World) -> List[List[str]]:
    town = rng.choice(world.towns)
    disaster, what_happened = rng.choice(DISASTERS)
    year = rng.randrange(max(town.founded + 50, 1600), 1950)
    month = rng.choice(MONTHS)
    houses = rng.randrange(3, 400)
    mayor = make_person(rng, town, town.trade)
    he, _, his = PRONOUNS[mayor.gender]
    account = [
        f"The {disaster} of {year} struck {town.name} in {month} of that year.",
        f"In a single night, {what_happened}, and {count(houses, 'house')} were lost.",
    ] + pick(rng, [
        lambda: f"The {town.landmark} was {rng.choice(['damaged', 'saved', 'badly damaged'])}.",
        lambda: aftermath(rng, disaster, rng.choice(towns_in(world, town.region, town))),
        lambda: f"Many {plural(town.trade)} lost their {plural(TRADES[town.trade].workplace)}.",
    ], rng.randrange(1, 3))
    helper = rng.choice(towns_in(world, town.region, town))
    rebuilt = rng.choice(["mostly in stone", "with wider streets", "further from the river"])
    after = [
        f"The mayor, {mayor.name}, asked {helper.name} for help, and {he} opened the {town.landmark} "
        f"to those who had lost their homes.",
        f"The town was rebuilt by {year + rng.randrange(2, 12)}, {rebuilt}.",
    ] + pick(rng, [
        lambda: f"Since then, {town.name} has held a service every {month} to remember the {disaster}.",
        lambda: f"{capitalise(his)} diary of the {disaster} is kept in the {town.landmark}.",
    ], rng.randrange(0, 2))
    return [[f"The {disaster} of {year} in {town.name}"], account, after]


def aftermath(rng: random.Random, disaster: str, neighbour: Town) -> str:
    if disaster == "flood":
        return f"The water stood {rng.randrange(2, 9)} feet deep in the market place."
    if disaster == "fire":
        return f"The smoke was seen from {neighbour.name}, and its people came to help."
    return f"The road to {neighbour.name} was closed for {count(rng.randrange(2, 20), 'day')}."


def river_document(rng: random.Random, world: World) -> List[List[str]]:
    region = rng.choice(world.regions)
    river = f"the River {region.river}"
    towns = [town.name for town in towns_in(world, region, None)]
    source, mouth = rng.sample(towns, 2)
    on_it = rng.sample([town for town in towns if town not in (source, mouth)], 2)
    wildlife = [species for species in world.species if species.region == region]
    course = [
        f"{capitalise(river)} flows through {region.name}.",
        f"It rises in the hills above {source} and meets the sea below {mouth}, {rng.randrange(20, 140)} "
        f"miles away.",
    ] + pick(rng, [
        lambda: f"On its way, it passes {listing(on_it)}.",
        lambda: f"The {region.river} is crossed by {count(rng.randrange(2, 30), 'bridge')}, the oldest at "
        f"{rng.choice(towns)}.",
        lambda: f"Its banks are home to the {rng.choice(wildlife).name}.",
    ], rng.randrange(1, 3))
    return [[capitalise(river)], course]


DOCUMENT_KINDS = [(town_document, 3), (animal_document, 3), (person_document, 3), (event_document, 1),
                  (river_document, 1)]


def make_corpus(world: World, seed: int, num_words: int) -> str:
    rng = random.Random(seed)
    kinds = [kind for kind, weight in DOCUMENT_KINDS for _ in range(weight)]
    documents: List[str] = []
    words = 0
    while words < num_words:
        paragraphs = rng.choice(kinds)(rng, world)
        text = "\n".join(" ".join(sentences) for sentences in paragraphs)
        documents.append(text)
        words += len(text.split())
    return "\n\n".join(documents) + "\n"


# ----------------------------------------------------------------------------------------------------


def unknown_rate(vocab_file: str, text_file: str) -> float:
    from maelmo_plugin.common.wordpiece import load_wordpiece_tokenizer

    tokenizer = load_wordpiece_tokenizer(vocab_file)
    with open(text_file, encoding="utf-8") as lines:
        ids = [i for line in lines for i in tokenizer(line, add_special_tokens=False)["input_ids"]]
    return ids.count(tokenizer.unk_token_id) / max(len(ids), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=os.path.normpath(SAMPLE_DIR))
    args = parser.parse_args()
    # The vocabulary is trained with the project's own function, so the repo root must be importable.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from maelmo_plugin.commands.wordpiece_vocab import train_wordpiece_vocab

    world = make_world(random.Random(WORLD_SEED))
    os.makedirs(args.output_dir, exist_ok=True)
    splits = [("train.txt", TRAIN_SEED, TRAIN_WORDS), ("valid.txt", VALID_SEED, VALID_WORDS)]
    for name, seed, num_words in splits:
        path = os.path.join(args.output_dir, name)
        text = make_corpus(world, seed, num_words)
        with open(path, "w", encoding="utf-8", newline="\n") as output:
            output.write(text)
        print(f"{path}: {text.count(chr(10) * 2) + 1} documents, {len(text.split()):,} words, "
              f"{len(text.encode('utf-8')):,} bytes")
    train_path = os.path.join(args.output_dir, "train.txt")
    vocab_file = train_wordpiece_vocab([train_path], args.output_dir, vocab_size=2000, min_frequency=2)
    with open(vocab_file, encoding="utf-8") as lines:
        print(f"{vocab_file}: {sum(1 for _ in lines)} entries")
    rate = unknown_rate(vocab_file, os.path.join(args.output_dir, "valid.txt"))
    print(f"[UNK] rate on valid.txt: {rate:.3%}")


if __name__ == "__main__":
    main()
