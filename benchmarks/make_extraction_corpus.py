"""Generate ``benchmarks/extraction_corpus.jsonl``, the extraction benchmark's corpus (seeded).

Run from the repository root::

    .venv/bin/python benchmarks/make_extraction_corpus.py [--out benchmarks/extraction_corpus.jsonl]

Each line is one user message and the facts a good extractor should produce from it::

    {"user": "I moved to Berlin in 2024.", "kind": "home",
     "expected": [{"category": "personal", "must_contain": ["Berlin", "2024"]}]}

Rows with ``"split": "heldout"`` are hand-written messages added after the rule-based extractor
existed and never used to tune it; the benchmark reports them separately.

``expected`` is empty for non-statements (small talk, questions, instructions to the assistant,
statements about third parties with no link to the user, hypotheticals, and turns where only the
assistant states anything; those carry an ``assistant`` field). ``must_contain`` holds the
specifics a fact must keep verbatim (names, places, numbers, dates, versions, paths, URLs,
quoted strings) and, where the user negated something, the negation ("not" for don't/doesn't,
"never" for never), since a fact that loses its negation says the opposite.

The templates were written before the rule-based extractor and independently of it, to cover
wordings people actually use; they are not tuned to what the rules catch. Every template is drawn
a few times with different slot values (a seeded ``random.Random``), and a share of messages gets
a casual variation (lower case, no final full stop, a "btw"-style prefix). Some messages hold
several statements; some mix a statement with a question or a request.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

SEED = 20261130
OUT = Path(__file__).resolve().parent / "extraction_corpus.jsonl"

# ---------------------------------------------------------------------------------------------
# Slot values. A slot whose values are dicts is referenced as {slot} (its "text") or
# {slot.field}; a slot name with a digit suffix ({city2}) draws a different value of the same list.
# ---------------------------------------------------------------------------------------------

# fmt: off
SLOTS: dict[str, list[Any]] = {
    "first": [
        "Ana", "Tom", "Priya", "Jonas", "Mei", "Kwame", "Sofia", "Luca", "Hannah", "Omar",
        "Yuki", "Marta", "Ben", "Chloe", "Diego", "Ingrid", "Ravi", "Elena", "Noah", "Leila",
        "Tomás", "Zoë",
    ],
    "nick": ["Sam", "Jo", "Alex", "Bea", "Max", "Kit", "Tess", "Nico"],
    "age": [str(n) for n in range(19, 72, 3)],
    "byear": [str(y) for y in range(1961, 2005, 3)],
    "year": [str(y) for y in range(2008, 2026)],
    "futyear": ["2026", "2027", "2028", "2029", "2030"],
    "month": [
        "January", "February", "March", "April", "May", "June", "July", "August", "September",
        "October", "November", "December",
    ],
    "dom": ["3", "9", "14", "21", "28", "30"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "date": [
        "March 3", "June 14th", "2026-09-01", "1 October", "the 21st", "May 12", "August 30th",
        "12/11", "Friday the 13th", "next Thursday",
    ],
    "deadline": [
        {"text": "the end of the year", "key": "end of the year"},
        {"text": "June 2026", "key": "June 2026"},
        {"text": "next spring", "key": "next spring"},
        {"text": "my 40th birthday", "key": "40th birthday"},
        {"text": "March 15", "key": "March 15"},
        {"text": "2027", "key": "2027"},
        {"text": "Christmas", "key": "Christmas"},
        {"text": "the end of the month", "key": "end of the month"},
        {"text": "October", "key": "October"},
        {"text": "summer 2028", "key": "summer 2028"},
    ],
    "time": ["6:30", "7am", "9:15 pm", "10:45", "5.30am", "22:00", "8 o'clock", "noon"],
    "city": [
        "Lisbon", "Berlin", "Porto", "Osaka", "Toronto", "Nairobi", "Melbourne", "Oslo", "Seoul",
        "Edinburgh", "Montreal", "Kraków", "Valencia", "Austin", "Lyon", "Denver", "São Paulo",
        "Cape Town", "Dublin", "Hamburg", "New York", "Mexico City", "Buenos Aires", "Kuala Lumpur",
    ],
    "country": [
        "Portugal", "Germany", "Japan", "Canada", "Kenya", "Brazil", "Ireland", "India", "Mexico",
        "Poland", "Spain", "Nigeria", "Vietnam", "Scotland", "New Zealand",
    ],
    "nationality": [
        "Portuguese", "German", "Japanese", "Canadian", "Kenyan", "Brazilian", "Irish", "Indian",
        "Mexican", "Polish", "Spanish", "Nigerian", "Vietnamese", "Dutch", "Korean",
    ],
    "lang": [
        "Portuguese", "German", "Japanese", "French", "Spanish", "Mandarin", "Swahili", "Polish",
        "Italian", "Dutch", "Korean", "Arabic", "Hindi",
    ],
    "relation": [
        "sister", "brother", "mom", "dad", "mother", "father", "wife", "husband", "partner",
        "son", "daughter", "cousin", "aunt", "uncle", "grandma", "best friend", "girlfriend",
        "boyfriend", "niece", "nephew", "roommate",
    ],
    "job": [
        "nurse", "software engineer", "teacher", "accountant", "graphic designer", "electrician",
        "data scientist", "chef", "pharmacist", "architect", "lawyer", "physiotherapist",
        "product manager", "civil engineer", "journalist", "veterinarian", "dentist",
        "firefighter", "UX researcher",
    ],
    "employer": [
        "Siemens", "Spotify", "Shopify", "the NHS", "Deloitte", "Google", "Airbus", "Zalando",
        "Novartis", "the city council", "Accenture", "IKEA", "Unilever", "a startup called Fernlight",
    ],
    "role": [
        "senior backend engineer", "team lead", "head of design", "staff engineer", "data analyst",
        "project manager", "CTO", "marketing director", "junior developer", "QA lead",
    ],
    "project": [
        {"text": "the billing migration", "key": "billing migration"},
        {"text": "a budgeting app for my family", "key": "budgeting app"},
        {"text": "a Rust CLI for tracking habits", "key": "Rust CLI for tracking habits"},
        {"text": "our new onboarding flow", "key": "new onboarding flow"},
        {"text": "a home automation setup with Home Assistant", "key": "Home Assistant"},
        {"text": "my thesis on coral reefs", "key": "thesis on coral reefs"},
        {"text": "a podcast about urban gardening", "key": "podcast about urban gardening"},
        {"text": "the Q3 data warehouse cleanup", "key": "Q3 data warehouse cleanup"},
        {"text": "a recipe-sharing website", "key": "recipe-sharing website"},
        {"text": "the mobile checkout redesign", "key": "mobile checkout redesign"},
    ],
    "tool": [
        "PostgreSQL", "Kubernetes", "Terraform", "Django", "React", "SQLite", "Docker", "FastAPI",
        "Obsidian", "Notion", "Excel", "Blender", "Figma", "Airflow", "Dagster", "pandas",
    ],
    "editor": ["Neovim", "VS Code", "Emacs", "Sublime Text", "IntelliJ", "Helix"],
    "proglang": [
        "Python", "Rust", "Go", "TypeScript", "Java", "Kotlin", "C++", "Elixir", "Ruby",
        "Haskell", "Swift", "Scala",
    ],
    "sw": [
        {"text": "Python 3.11", "name": "Python", "ver": "3.11"},
        {"text": "Node 20.11", "name": "Node", "ver": "20.11"},
        {"text": "PostgreSQL 16.2", "name": "PostgreSQL", "ver": "16.2"},
        {"text": "Ubuntu 24.04", "name": "Ubuntu", "ver": "24.04"},
        {"text": "macOS 14.5", "name": "macOS", "ver": "14.5"},
        {"text": "Django 5.0.6", "name": "Django", "ver": "5.0.6"},
        {"text": "Kubernetes v1.29", "name": "Kubernetes", "ver": "v1.29"},
        {"text": "Java 17", "name": "Java", "ver": "17"},
        {"text": "Rust 1.78", "name": "Rust", "ver": "1.78"},
    ],
    "os": ["Ubuntu 24.04", "macOS 14.5", "Windows 11", "Fedora 40", "Arch Linux", "Debian 12"],
    "path": [
        "~/notes", "~/code/dotfiles", "/home/sam/projects", "D:\\Photos\\2023", "~/Documents/taxes/2024",
        "/srv/backups", "~/.config/nvim/init.lua", "/mnt/nas/media",
    ],
    "url": [
        "https://anasilva.dev", "https://github.com/tomkraus", "https://example.com/portfolio",
        "https://blog.priya.io", "https://www.instagram.com/meibakes", "http://kwame.codes/about",
    ],
    "email": ["ana.silva@example.com", "tom@kraus.dev", "priya.n@mailbox.org", "jonas_b@proton.me"],
    "ghuser": ["tomkraus", "ana-silva", "priya_codes", "mei-bakes", "kwame42"],
    "server": ["Raspberry Pi 5", "Hetzner VPS", "old ThinkPad", "Synology NAS"],
    "food": [
        "sushi", "mushrooms", "olives", "cilantro", "spicy food", "dark chocolate",
        "pineapple on pizza", "oysters", "Thai curry", "blue cheese", "raw onions", "liquorice",
        "brussels sprouts",
    ],
    "drink": ["black coffee", "green tea", "oat milk lattes", "sparkling water", "matcha", "kombucha"],
    "hobby": [
        "bouldering", "baking sourdough", "playing chess", "hiking", "knitting", "photography",
        "running", "gardening", "playing the guitar", "board games", "watching anime",
        "salsa dancing", "birdwatching", "woodworking",
    ],
    "genre": [
        "jazz", "Radiohead", "Taylor Swift", "heavy metal", "k-pop", "history podcasts",
        "sci-fi novels", "horror movies", "Studio Ghibli films",
    ],
    "fav": [
        {"text": "green", "cat": "colour"},
        {"text": "Dune", "cat": "book"},
        {"text": "Spirited Away", "cat": "movie"},
        {"text": "Radiohead", "cat": "band"},
        {"text": "ramen", "cat": "food"},
        {"text": "autumn", "cat": "season"},
        {"text": "The Wire", "cat": "TV show"},
        {"text": "Lisbon", "cat": "city"},
    ],
    "pref": [
        {"text": "tea over coffee", "a": "tea", "b": "coffee"},
        {"text": "dark mode over light mode", "a": "dark mode", "b": "light mode"},
        {"text": "tabs over spaces", "a": "tabs", "b": "spaces"},
        {"text": "trains over planes", "a": "trains", "b": "planes"},
        {"text": "paper books over e-books", "a": "paper books", "b": "e-books"},
        {"text": "cats over dogs", "a": "cats", "b": "dogs"},
        {"text": "the mountains over the beach", "a": "mountains", "b": "beach"},
        {"text": "window seats over aisle seats", "a": "window", "b": "aisle"},
    ],
    "always": [
        {"text": "take the stairs", "key": "stairs"},
        {"text": "drink my coffee black", "key": "black"},
        {"text": "book aisle seats", "key": "aisle"},
        {"text": "cycle to work", "key": "cycle"},
        {"text": "read before bed", "key": "read"},
        {"text": "pay in cash at markets", "key": "cash"},
    ],
    "never": [
        {"text": "eat after 8pm", "key": "8pm"},
        {"text": "fly budget airlines", "key": "budget airlines"},
        {"text": "drink coffee after 3pm", "key": "3pm"},
        {"text": "check work email on weekends", "key": "email"},
        {"text": "watch horror movies", "key": "horror"},
    ],
    "goal": [
        {"text": "run a marathon", "key": "marathon"},
        {"text": "learn to play the piano", "key": "piano"},
        {"text": "get my driving licence", "key": "driving"},
        {"text": "write a novel", "key": "novel"},
        {"text": "visit Japan", "key": "Japan"},
        {"text": "lose 10 kg", "key": "10 kg"},
        {"text": "save 20,000 euros", "key": "20,000"},
        {"text": "launch my own business", "key": "business"},
        {"text": "get a PhD", "key": "PhD"},
        {"text": "buy a house", "key": "house"},
        {"text": "learn to swim", "key": "swim"},
        {"text": "climb Kilimanjaro", "key": "Kilimanjaro"},
        {"text": "switch careers into UX design", "key": "UX design"},
    ],
    "try": [
        {"text": "cut down on sugar", "key": "sugar"},
        {"text": "quit smoking", "key": "smoking"},
        {"text": "sleep before midnight", "key": "midnight"},
        {"text": "drink less coffee", "key": "coffee"},
        {"text": "get up at 6am", "key": "6am"},
    ],
    "saving": ["a new bike", "a trip to Japan", "a house deposit", "a Steam Deck", "a wedding"],
    "decision": [
        {"text": "go back to university", "key": "university"},
        {"text": "sell my car", "key": "car"},
        {"text": "learn to cook properly", "key": "cook"},
        {"text": "take a gap year", "key": "gap year"},
    ],
    "cert": ["AWS certification", "driving licence", "PhD", "CPA license", "yoga teacher certificate"],
    "allergen": [
        "peanuts", "shellfish", "penicillin", "cats", "pollen", "tree nuts", "latex", "bee stings",
        "sesame", "dust mites",
    ],
    "allergen2": ["peanut", "shellfish", "penicillin", "cat", "pollen", "sesame"],
    "condition": [
        "type 2 diabetes", "asthma", "ADHD", "migraines", "high blood pressure", "celiac disease",
        "a bad knee", "tinnitus", "IBS", "hypothyroidism", "dyslexia",
    ],
    "diet": ["vegetarian", "vegan", "pescatarian", "gluten-free", "lactose intolerant", "diabetic"],
    "diet2": ["keto", "low-FODMAP", "low-sodium", "Mediterranean", "plant-based"],
    "meat": ["pork", "red meat", "meat", "fish", "eggs", "dairy"],
    "medication": ["metformin", "an antihistamine", "levothyroxine", "vitamin D", "iron supplements", "insulin"],
    "freq": ["three times a week", "every morning", "twice a week", "every Sunday", "four days a week"],
    "dist": ["5", "10", "3.5", "21"],
    "height": ["1.82 m", "5'9\"", "180 cm", "1.65m", "6 foot 2"],
    "weight": ["72 kg", "160 lbs", "85kg", "11 stone"],
    "hours": ["5", "6", "7", "8", "9"],
    "limb": ["wrist", "ankle", "arm", "collarbone", "leg"],
    "injury": ["sprained ankle", "bad flu", "knee operation", "concussion", "broken toe"],
    "pet": ["dog", "cat", "parrot", "rabbit", "hamster", "tortoise", "golden retriever", "border collie"],
    "petname": ["Luna", "Max", "Biscuit", "Pepper", "Mochi", "Rex", "Olive", "Ziggy"],
    "petage": ["2", "4", "7", "11", "14"],
    "car": ["Toyota Corolla", "Tesla Model 3", "Volkswagen Golf", "Honda Civic", "Fiat 500", "Subaru Outback"],
    "possession": [
        "3D printer", "electric piano", "sailboat", "vintage Leica camera", "PlayStation 5",
        "iPad Pro", "standing desk", "cabin in the mountains", "ThinkPad X1 Carbon", "Kindle",
    ],
    "count": ["two", "three", "four", "2", "3"],
    "num": ["3", "5", "8", "12", "15", "25", "40"],
    "exam": [
        {"text": "the bar exam", "key": "bar exam"},
        {"text": "my driving test", "key": "driving test"},
        {"text": "the IELTS", "key": "IELTS"},
        {"text": "my thesis defence", "key": "thesis defence"},
        {"text": "the AWS certification exam", "key": "AWS certification exam"},
        {"text": "my final chemistry exam", "key": "final chemistry exam"},
    ],
    "subject": [
        "computer science", "law", "medicine", "architecture", "nursing", "economics", "philosophy",
        "mechanical engineering",
    ],
    "university": [
        "the University of Porto", "TU Berlin", "McGill", "the Open University", "KU Leuven",
        "the University of Edinburgh",
    ],
    "quote": ["stay hungry, stay foolish", "less is more", "done is better than perfect", "the obstacle is the way"],
    "ssid": ["Casa-Silva-5G", "Pretty Fly for a WiFi", "TP-Link_4E21"],
    "style": [
        {"text": "short and to the point", "key": "short"},
        {"text": "in bullet points", "key": "bullet"},
        {"text": "in British English", "key": "British"},
        {"text": "formal", "key": "formal"},
    ],
    "concept": ["recursion", "inflation", "quantum computing", "compound interest", "photosynthesis"],
    "task": ["rename a column", "write a unit test", "set up a cron job", "undo a commit"],
}
# fmt: on

# ---------------------------------------------------------------------------------------------
# Statements: (kind, template, [(category, [must_contain templates]), ...])
# ---------------------------------------------------------------------------------------------

F = tuple[str, list[str]]
P, PR, G, T, C, IA = "personal", "preference", "goal", "technical", "context", "interaction"

STATEMENTS: list[tuple[str, str, list[F]]] = [
    # identity
    ("identity", "My name is {first}.", [(P, ["{first}"])]),
    ("identity", "my name's {first} btw", [(P, ["{first}"])]),
    ("identity", "Hi! I'm {first}, nice to meet you.", [(P, ["{first}"])]),
    ("identity", "I'm {age} years old.", [(P, ["{age}"])]),
    ("identity", "I'm {age}, if that matters.", [(P, ["{age}"])]),
    ("identity", "I just turned {age} last week.", [(P, ["{age}"])]),
    ("identity", "I was born in {byear}.", [(P, ["{byear}"])]),
    ("identity", "I was born in {city} but grew up in {city2}.", [(P, ["{city}"]), (P, ["{city2}"])]),
    ("identity", "My birthday is {month} {dom}.", [(P, ["{month}", "{dom}"])]),
    ("identity", "I'm {nationality}.", [(P, ["{nationality}"])]),
    (
        "identity",
        "I'm {nationality} but I've lived abroad for {num} years.",
        [(P, ["{nationality}"]), (P, ["abroad", "{num}"])],
    ),
    ("identity", "I'm originally from {country}.", [(P, ["{country}"])]),
    ("identity", "I grew up in a small town near {city}.", [(P, ["{city}"])]),
    ("identity", "I speak {lang}, {lang2} and a bit of {lang3}.", [(P, ["{lang}", "{lang2}", "{lang3}"])]),
    ("identity", "I'm fluent in {lang} and {lang2}.", [(P, ["{lang}", "{lang2}"])]),
    ("identity", "My native language is {lang}.", [(P, ["{lang}"])]),
    ("identity", "{lang} is my first language.", [(P, ["{lang}"])]),
    ("identity", "I'm a native {lang} speaker.", [(P, ["{lang}"])]),
    ("identity", "You can call me {nick}.", [(IA, ["{nick}"])]),
    ("identity", "I go by {nick}.", [(P, ["{nick}"])]),
    ("identity", "I'm left-handed.", [(P, ["left-handed"])]),
    ("identity", "I'm an introvert, honestly.", [(P, ["introvert"])]),
    # family and relationships
    (
        "family",
        "My {relation} {first} is a {job} in {city}.",
        [(P, ["{relation}", "{first}", "{job}", "{city}"])],
    ),
    ("family", "my {relation} {first} works as a {job}", [(P, ["{relation}", "{first}", "{job}"])]),
    ("family", "My {relation}'s name is {first}.", [(P, ["{relation}", "{first}"])]),
    ("family", "I have a {relation} called {first}.", [(P, ["{relation}", "{first}"])]),
    ("family", "I've got two kids, {first} and {first2}.", [(P, ["two", "{first}", "{first2}"])]),
    ("family", "I have {count} kids.", [(P, ["{count}", "kids"])]),
    ("family", "My {relation} lives in {city}.", [(P, ["{relation}", "{city}"])]),
    ("family", "My {relation} just moved to {city}.", [(P, ["{relation}", "{city}"])]),
    ("family", "My {relation} works at {employer}.", [(P, ["{relation}", "{employer}"])]),
    ("family", "I'm married to {first}.", [(P, ["married", "{first}"])]),
    ("family", "I've been married for {num} years.", [(P, ["married", "{num}"])]),
    ("family", "My wife and I have been together since {year}.", [(P, ["wife", "{year}"])]),
    ("family", "My partner {first} is a {job}.", [(P, ["partner", "{first}", "{job}"])]),
    (
        "family",
        "My {relation} {first} is turning {age} on {weekday}.",
        [(P, ["{relation}", "{first}", "{age}", "{weekday}"])],
    ),
    ("family", "My daughter {first} started school in {month}.", [(P, ["daughter", "{first}", "{month}"])]),
    ("family", "I'm single.", [(P, ["single"])]),
    ("family", "I'm divorced and have a son named {first}.", [(P, ["divorced"]), (P, ["son", "{first}"])]),
    ("family", "My parents live in {city}.", [(P, ["parents", "{city}"])]),
    ("family", "My {relation} is allergic to {allergen}.", [(P, ["{relation}", "{allergen}"])]),
    (
        "family",
        "My best friend {first} is getting married in {month}.",
        [(P, ["best friend", "{first}", "{month}"])],
    ),
    # home
    ("home", "I live in {city}.", [(P, ["{city}"])]),
    ("home", "I live in {city} with my {relation}.", [(P, ["{city}", "{relation}"])]),
    ("home", "i live in {city} now", [(P, ["{city}"])]),
    ("home", "I moved to {city} in {year}.", [(P, ["{city}", "{year}"])]),
    ("home", "I moved to {city} from {city2} back in {year}.", [(P, ["{city}", "{city2}", "{year}"])]),
    ("home", "We just moved to {city}!", [(P, ["{city}"])]),
    ("home", "I'm based in {city}.", [(P, ["{city}"])]),
    ("home", "I've been living in {city} for {num} years.", [(P, ["{city}", "{num}"])]),
    ("home", "I live in a {count}-bedroom flat in {city}.", [(P, ["{count}", "{city}"])]),
    ("home", "Home for me is {city} these days.", [(P, ["{city}"])]),
    ("home", "I'm moving to {city} next {month}.", [(G, ["{city}", "{month}"])]),
    ("home", "I'm moving to {city} in {month} for a new job.", [(G, ["{city}", "{month}"])]),
    ("home", "I rent an apartment in {city}.", [(P, ["{city}"])]),
    ("home", "We bought a house in {city} last year.", [(P, ["{city}"])]),
    ("home", "I live on a farm outside {city}.", [(P, ["{city}"])]),
    ("home", "I split my time between {city} and {city2}.", [(P, ["{city}", "{city2}"])]),
    # work and study
    ("work", "I work as a {job}.", [(P, ["{job}"])]),
    ("work", "I'm a {job}.", [(P, ["{job}"])]),
    ("work", "I'm a {job} by trade.", [(P, ["{job}"])]),
    ("work", "I work at {employer}.", [(P, ["{employer}"])]),
    ("work", "I work for {employer} as a {role}.", [(P, ["{employer}", "{role}"])]),
    ("work", "I'm a {role} at {employer}.", [(P, ["{role}", "{employer}"])]),
    ("work", "I've been a {job} for {num} years.", [(P, ["{job}", "{num}"])]),
    ("work", "I just started a new job at {employer}.", [(P, ["{employer}"])]),
    ("work", "I got promoted to {role} last {month}.", [(P, ["{role}", "{month}"])]),
    ("work", "I'm working on {project}.", [(C, ["{project.key}"])]),
    ("work", "Right now I'm working on {project}.", [(C, ["{project.key}"])]),
    ("work", "My current project is {project}.", [(C, ["{project.key}"])]),
    ("work", "I lead a team of {num} engineers.", [(P, ["{num}"])]),
    ("work", "I manage {num} people at {employer}.", [(P, ["{num}", "{employer}"])]),
    ("work", "My manager is {first}.", [(P, ["manager", "{first}"])]),
    ("work", "I'm a freelance {job}.", [(P, ["freelance", "{job}"])]),
    ("work", "I'm studying {subject} at {university}.", [(P, ["{subject}", "{university}"])]),
    ("work", "I'm in my final year of {subject} at {university}.", [(P, ["{subject}", "{university}"])]),
    ("work", "I work from home on {weekday}s.", [(P, ["{weekday}"])]),
    ("work", "I'm retired; I used to be a {job}.", [(P, ["retired"]), (P, ["{job}"])]),
    ("work", "I'm between jobs at the moment.", [(C, ["between jobs"])]),
    ("work", "I start work at {time} every day.", [(P, ["{time}"])]),
    # technical: tools, stack, skills
    ("technical", "I use {tool} for most of my work.", [(T, ["{tool}"])]),
    ("technical", "I mostly code in {proglang}.", [(T, ["{proglang}"])]),
    ("technical", "I write {proglang} for a living.", [(T, ["{proglang}"])]),
    ("technical", "Our stack is {tool}, {tool2} and {tool3}.", [(T, ["{tool}", "{tool2}", "{tool3}"])]),
    ("technical", "We use {tool} at work.", [(T, ["{tool}"])]),
    ("technical", "I'm on {sw}.", [(T, ["{sw.name}", "{sw.ver}"])]),
    ("technical", "We're running {sw} in production.", [(T, ["{sw.name}", "{sw.ver}"])]),
    ("technical", "My laptop runs {os}.", [(T, ["{os}"])]),
    ("technical", "My dotfiles are in {path}.", [(T, ["{path}"])]),
    ("technical", "I keep my notes in {path}.", [(T, ["{path}"])]),
    (
        "technical",
        "I know {proglang} pretty well but I'm new to {proglang2}.",
        [(T, ["{proglang}"]), (T, ["{proglang2}"])],
    ),
    (
        "technical",
        "I'm comfortable with {tool} but have never used {tool2}.",
        [(T, ["{tool}"]), (T, ["{tool2}", "never"])],
    ),
    ("technical", "I deploy everything with {tool}.", [(T, ["{tool}"])]),
    ("technical", "I use {editor} with vim keybindings.", [(T, ["{editor}", "vim"])]),
    ("technical", "My editor of choice is {editor}.", [(T, ["{editor}"])]),
    ("technical", "I've been programming in {proglang} since {year}.", [(T, ["{proglang}", "{year}"])]),
    ("technical", "I self-host my stuff on a {server}.", [(T, ["{server}"])]),
    ("technical", "My backups go to {path} every night.", [(T, ["{path}"])]),
    ("technical", "My blog runs on {sw}.", [(T, ["{sw.name}", "{sw.ver}"])]),
    ("technical", 'My wifi network is called "{ssid}".', [(T, ["{ssid}"])]),
    # links and handles
    ("identity", "My portfolio is at {url}.", [(P, ["{url}"])]),
    ("identity", "My GitHub username is {ghuser}.", [(P, ["{ghuser}"])]),
    ("identity", "My email is {email}.", [(P, ["{email}"])]),
    ("identity", "my website is {url}", [(P, ["{url}"])]),
    # preferences
    ("preference", "I prefer {pref}.", [(PR, ["{pref.a}", "{pref.b}"])]),
    ("preference", "I prefer metric units.", [(PR, ["metric"])]),
    ("preference", "I'd rather take the train than fly.", [(PR, ["train"])]),
    ("preference", "I like {food}.", [(PR, ["{food}"])]),
    ("preference", "I love {hobby}.", [(PR, ["{hobby}"])]),
    ("preference", "i really enjoy {hobby}", [(PR, ["{hobby}"])]),
    ("preference", "I'm really into {genre} lately.", [(PR, ["{genre}"])]),
    ("preference", "I'm a huge fan of {genre}.", [(PR, ["{genre}"])]),
    ("preference", "I hate {food}.", [(PR, ["{food}", "hate"])]),
    ("preference", "I don't like {food}.", [(PR, ["{food}", "not"])]),
    ("preference", "I really don't like {food}.", [(PR, ["{food}", "not"])]),
    ("preference", "I can't stand {food}.", [(PR, ["{food}"])]),
    ("preference", "I'm not a fan of {food}.", [(PR, ["{food}", "not"])]),
    ("preference", "My favourite {fav.cat} is {fav}.", [(PR, ["{fav.cat}", "{fav}"])]),
    ("preference", "My favorite {fav.cat} is {fav}.", [(PR, ["{fav.cat}", "{fav}"])]),
    ("preference", "{fav} is my favourite {fav.cat}.", [(PR, ["{fav.cat}", "{fav}"])]),
    ("preference", "I always {always}.", [(PR, ["{always.key}", "always"])]),
    ("preference", "I never {never}.", [(PR, ["{never.key}", "never"])]),
    ("preference", "I usually drink {drink} in the morning.", [(PR, ["{drink}"])]),
    ("preference", "I'm a morning person.", [(PR, ["morning person"])]),
    ("preference", "I'm more of a night owl.", [(PR, ["night owl"])]),
    ("preference", "I'm more of a {pet} person.", [(PR, ["{pet}"])]),
    ("preference", "Music-wise I mostly listen to {genre}.", [(PR, ["{genre}"])]),
    ("preference", "I like my coffee with oat milk.", [(PR, ["oat milk"])]),
    ("preference", "I love {food} but I hate {food2}.", [(PR, ["{food}"]), (PR, ["{food2}", "hate"])]),
    ("preference", "I enjoy {hobby} on weekends.", [(PR, ["{hobby}", "weekends"])]),
    # goals and plans
    ("goal", "I want to {goal}.", [(G, ["{goal.key}"])]),
    ("goal", "I want to {goal} by {deadline}.", [(G, ["{goal.key}", "{deadline.key}"])]),
    ("goal", "I'd like to {goal} someday.", [(G, ["{goal.key}"])]),
    ("goal", "My goal is to {goal} this year.", [(G, ["{goal.key}", "this year"])]),
    ("goal", "I'm planning to {goal} next year.", [(G, ["{goal.key}", "next year"])]),
    ("goal", "I plan to {goal} before {deadline}.", [(G, ["{goal.key}", "{deadline.key}"])]),
    ("goal", "I'm going to {goal} in {futyear}.", [(G, ["{goal.key}", "{futyear}"])]),
    ("goal", "I'm hoping to {goal} by {deadline}.", [(G, ["{goal.key}", "{deadline.key}"])]),
    ("goal", "I'm trying to {try}.", [(G, ["{try.key}"])]),
    ("goal", "I'm saving up for {saving}.", [(G, ["{saving}"])]),
    ("goal", "This year I want to read {num} books.", [(G, ["{num}", "books"])]),
    ("goal", "I'm going to {city} in {month}.", [(G, ["{city}", "{month}"])]),
    ("goal", "We're going to {city} for our honeymoon in {month}.", [(G, ["{city}", "{month}"])]),
    ("goal", "I've decided to {decision}.", [(G, ["{decision.key}"])]),
    ("goal", "Next month I'm starting a course in {subject}.", [(G, ["{subject}"])]),
    ("goal", "I need to finish {project} by {deadline}.", [(G, ["{project.key}", "{deadline.key}"])]),
    ("goal", "Hoping to get my {cert} before {deadline}.", [(G, ["{cert}", "{deadline.key}"])]),
    ("goal", "We're getting married on {date}.", [(G, ["married", "{date}"])]),
    ("goal", "i wanna {goal}", [(G, ["{goal.key}"])]),
    ("goal", "I'm gonna {goal} next summer", [(G, ["{goal.key}", "next summer"])]),
    ("goal", "I'm learning {lang}.", [(G, ["{lang}"])]),
    ("goal", "I'm learning {proglang} at the moment.", [(G, ["{proglang}"])]),
    # health
    ("health", "I'm allergic to {allergen}.", [(P, ["{allergen}"])]),
    ("health", "I have a severe {allergen2} allergy.", [(P, ["{allergen2}"])]),
    ("health", "I have {condition}.", [(P, ["{condition}"])]),
    ("health", "I've got {condition}.", [(P, ["{condition}"])]),
    ("health", "I was diagnosed with {condition} in {year}.", [(P, ["{condition}", "{year}"])]),
    ("health", "I'm {diet}.", [(P, ["{diet}"])]),
    ("health", "I'm on a {diet2} diet.", [(P, ["{diet2}"])]),
    ("health", "I don't eat {meat}.", [(P, ["{meat}", "not"])]),
    ("health", "I don't drink alcohol.", [(P, ["alcohol", "not"])]),
    ("health", "I run {dist} km {freq}.", [(P, ["{dist}", "{freq}"])]),
    ("health", "I go to the gym {freq}.", [(P, ["gym", "{freq}"])]),
    ("health", "I do yoga every {weekday} morning.", [(P, ["yoga", "{weekday}"])]),
    ("health", "I take {medication} every morning.", [(P, ["{medication}"])]),
    ("health", "I'm {height} tall.", [(P, ["{height}"])]),
    ("health", "I weigh about {weight}.", [(P, ["{weight}"])]),
    ("health", "I usually sleep about {hours} hours a night.", [(P, ["{hours}", "hours"])]),
    ("health", "I broke my {limb} in {month}.", [(C, ["{limb}", "{month}"])]),
    ("health", "I'm pregnant, due in {month}.", [(P, ["pregnant", "{month}"])]),
    ("health", "I wear glasses.", [(P, ["glasses"])]),
    ("health", "I'm colorblind.", [(P, ["colorblind"])]),
    ("health", "I'm colourblind, red and green look the same to me.", [(P, ["colourblind"])]),
    ("health", "I had knee surgery in {year}.", [(P, ["knee", "{year}"])]),
    ("health", "I'm recovering from a {injury}.", [(C, ["{injury}"])]),
    # possessions
    ("possession", "I have a {pet} called {petname}.", [(P, ["{pet}", "{petname}"])]),
    ("possession", "I've got a {pet} named {petname}.", [(P, ["{pet}", "{petname}"])]),
    ("possession", "I have {count} cats.", [(P, ["{count}", "cats"])]),
    ("possession", "Our dog {petname} is {petage} years old.", [(P, ["{petname}", "{petage}"])]),
    ("possession", "I own a {car}.", [(P, ["{car}"])]),
    ("possession", "I drive a {year} {car}.", [(P, ["{year}", "{car}"])]),
    ("possession", "I have a {possession}.", [(P, ["{possession}"])]),
    ("possession", "I just bought a {possession}.", [(P, ["{possession}"])]),
    ("possession", "I own a flat in {city}.", [(P, ["{city}"])]),
    ("possession", "My car is a {car}.", [(P, ["{car}"])]),
    # how the assistant should behave
    ("interaction", "Please always answer in {lang}.", [(IA, ["{lang}"])]),
    ("interaction", "From now on, keep your answers short.", [(IA, ["short"])]),
    ("interaction", "Always use metric units with me.", [(IA, ["metric"])]),
    ("interaction", "Don't use emojis when you talk to me.", [(IA, ["emoji", "not"])]),
    ("interaction", "I prefer short answers with bullet points.", [(IA, ["short", "bullet"])]),
    ("interaction", "When I ask for code, give me {proglang} examples.", [(IA, ["{proglang}"])]),
    ("interaction", "I like it when you explain things step by step.", [(IA, ["step by step"])]),
    ("interaction", "Please stop apologising so much.", [(IA, ["apologis"])]),
    ("interaction", "Never recommend {genre} to me.", [(IA, ["{genre}", "never"])]),
    ("interaction", "Please use British spelling from now on.", [(IA, ["British"])]),
    ("interaction", "Address me as {nick}.", [(IA, ["{nick}"])]),
    ("interaction", "I want your answers to be {style}.", [(IA, ["{style.key}"])]),
    ("interaction", "Be blunt with me, I don't need sugar-coating.", [(IA, ["blunt"])]),
    ("interaction", "In future, always cite your sources.", [(IA, ["sources"])]),
    (
        "interaction",
        "Whenever I ask about recipes, give me metric measurements.",
        [(IA, ["recipes", "metric"])],
    ),
    ("health", "Please remember that I'm {diet}.", [(P, ["{diet}"])]),
    ("work", "Keep in mind I'm a {job}.", [(P, ["{job}"])]),
    # time-bound context
    ("context", "I'm on holiday in {city} until {date}.", [(C, ["{city}", "{date}"])]),
    ("context", "I have a job interview at {employer} on {weekday}.", [(C, ["{employer}", "{weekday}"])]),
    ("context", "I've got a dentist appointment at {time} on {weekday}.", [(C, ["{time}", "{weekday}"])]),
    ("context", "I'm sick this week.", [(C, ["sick"])]),
    ("context", "I'm preparing for {exam} on {date}.", [(C, ["{exam.key}", "{date}"])]),
    ("context", "My exam is on {date}.", [(C, ["exam", "{date}"])]),
    ("context", "My flight to {city} leaves at {time} tomorrow.", [(C, ["{city}", "{time}"])]),
    ("context", "This week I'm working from home.", [(C, ["home"])]),
    ("context", "I'm off work until {date}.", [(C, ["{date}"])]),
    ("context", "I have a deadline on {date} for {project}.", [(C, ["{date}", "{project.key}"])]),
    ("context", "I'm staying with my {relation} until {weekday}.", [(C, ["{relation}", "{weekday}"])]),
    ("context", "I'm in {city} for a conference this week.", [(C, ["{city}", "conference"])]),
    ("context", "I'm renovating my kitchen at the moment.", [(C, ["kitchen"])]),
    ("preference", 'My favourite quote is "{quote}".', [(PR, ["{quote}"])]),
    # a statement with a question or a request in the same message
    ("mixed", "I live in {city} — what's the weather like there this weekend?", [(P, ["{city}"])]),
    ("mixed", "I'm vegetarian, can you suggest something for dinner?", [(P, ["vegetarian"])]),
    ("mixed", "I'm allergic to {allergen}. Which snacks should I avoid?", [(P, ["{allergen}"])]),
    (
        "mixed",
        "My {relation} {first} is a {job}; what should I get them for their birthday?",
        [(P, ["{relation}", "{first}", "{job}"])],
    ),
    ("mixed", "I'm learning {lang}. Any tips?", [(G, ["{lang}"])]),
    ("mixed", "I work at {employer} and need to write a report, can you help?", [(P, ["{employer}"])]),
    ("mixed", "I'm a {job} — explain {concept} in simple terms please.", [(P, ["{job}"])]),
    ("mixed", "I use {tool} at work. How do I {task} in it?", [(T, ["{tool}"])]),
    ("mixed", "We just moved to {city}. Where should we go for brunch?", [(P, ["{city}"])]),
    ("mixed", "I have a {pet} called {petname}. What's a good toy for it?", [(P, ["{pet}", "{petname}"])]),
    ("mixed", "I live in {city} and work as a {job}.", [(P, ["{city}"]), (P, ["{job}"])]),
]

# Simple single statements that read naturally when several are joined into one message.
COMBINABLE_KINDS = {
    "identity",
    "family",
    "home",
    "work",
    "technical",
    "preference",
    "goal",
    "health",
    "possession",
}

# ---------------------------------------------------------------------------------------------
# Non-statements: (kind, template[, assistant template])
# ---------------------------------------------------------------------------------------------

# fmt: off
SMALL_TALK = [
    "thanks!", "Thank you so much!", "thx", "how are you?", "how's it going?", "hi", "Hello there!",
    "good morning", "Good night!", "lol", "ok", "okay cool", "cool, thanks", "That's great!",
    "awesome", "nice one", "I'm fine, thanks.", "I'm good, you?", "sorry, my bad", "haha nice",
    "I see.", "got it", "I agree.", "I think so too.", "I'm not sure.", "I don't know.",
    "never mind", "I'm back.", "I'm so bored", "I guess that works.", "makes sense",
    "Perfect, that's exactly what I needed.", "I appreciate it!", "I love it!", "I like that idea.",
    "I hate when that happens.", "I'm confused.", "I'm kidding", "I'm sorry", "I'm done for today",
    "I'm ready when you are", "Yes please", "no thanks", "sounds good to me", "you're the best",
    "that was helpful", "I'll think about it.", "I'm just curious.", "hmm interesting", "wow",
    "I have a question.", "I have an idea!", "I'm going to ask you something weird.",
    "I mean the other one.", "I think you're wrong about that.", "I love this answer!",
    "I like your style.", "I need a minute.", "I'm here.", "good point", "fair enough", "bye!",
    "see you tomorrow", "talk later", "I can't believe it", "I knew it!", "I'm impressed", "oh no.",
    "I'm happy with that.", "I'm not convinced.", "I want to try something different.",
]
# fmt: on

QUESTIONS = [
    "What's the capital of {country}?",
    "Do you remember my sister?",
    "where do I live?",
    "What's my name?",
    "How do I reverse a list in {proglang}?",
    "Can you recommend a good book about {subject}?",
    "Is {city} nice in {month}?",
    "should I learn {lang} or {lang2}?",
    "Do I have anything on {weekday}?",
    "what time is it in {city}",
    "Am I allergic to anything?",
    "How old is my dog?",
    "Why does my {proglang} code crash when I run it?",
    "Did I tell you about my trip to {city}?",
    "Which is better, {tool} or {tool2}?",
    "Isn't {city} the capital of {country}?",
    "what should I cook for dinner",
    "how do i center a div",
    "Any tips for learning {lang}?",
    "Do you know where my {relation} works?",
    "What did I say my {relation}'s name was?",
    "Can I eat {food} if I'm pregnant?",
    "Do you think I should move to {city}?",
    "How many calories are in {food}?",
    "Where's the best place to live in {country}?",
    "Who won the World Cup in {year}?",
    "Is it normal that I sleep {hours} hours a night?",
    "What's the difference between {tool} and {tool2}?",
    "would I need a visa to visit {country}?",
    "Have I ever mentioned my {relation}?",
    "What's a good name for a {pet}?",
    "Could you tell me how to get to {city} by train?",
    "So what do you know about me?",
    "How long does it take to learn {proglang}?",
    "Why is the sky blue?",
    "Is {sw} still supported?",
]

INSTRUCTIONS = [
    "Write me a poem about {city}.",
    "Please summarise this article.",
    "Translate 'I live in {city}' into {lang}.",
    "Give me a recipe for {food}.",
    "Help me write an email to my {relation}.",
    "Explain {concept} like I'm five.",
    "Tell me a joke.",
    "Make it shorter.",
    "Fix this function for me.",
    "List three facts about {city}.",
    "Can you help me plan a trip to {city}?",
    "Rewrite this paragraph in a more formal tone.",
    "I need you to check my code.",
    "I want you to act as a {job}.",
    "I'd like a summary of this article, please.",
    "I want to know how photosynthesis works.",
    "I need a name for my new {pet}.",
    "Let's talk about {hobby}.",
    "Show me how to use {tool}.",
    "Draft a cover letter for a {job} position at {employer}.",
    "Generate a workout plan for me.",
    "Convert {num} miles to kilometres.",
    "Write a {proglang} function that sorts a list.",
    "Please proofread my essay.",
    "Give me five ideas for my {relation}'s birthday.",
    "Make a shopping list for a week of vegetarian meals.",
    "Compare {tool} and {tool2} for me.",
    "Continue.",
    "try again",
    "Explain the error I'm getting.",
    "Book a table for two at 7pm.",
    "Set a timer for {num} minutes.",
    "Remind me what we talked about yesterday.",
    "I'd like to see an example.",
    "I want to see the code again.",
    "Can you make the tone friendlier?",
    "Use the same format as before.",
]

THIRD_PARTY = [
    "{first} lives in {city}.",
    "{city} is the capital of {country}.",
    "{employer} was founded in {year}.",
    "She's a {job} in {city}.",
    "{sw} was released last week.",
    "Her brother moved to {city} in {year}.",
    "He works at {employer} as a {role}.",
    "They live in {city} with their {pet}.",
    "The article says most people prefer {pref}.",
    "Some people can't stand {food}.",
    "Everyone loves {food}.",
    "{first} is allergic to {allergen}.",
    "The Eiffel Tower is 330 metres tall.",
    "It's raining in {city} today.",
    "{first} and {first2} are getting married in {month}.",
    "The train to {city} leaves at {time}.",
    "Python lists are mutable.",
    "The meeting got moved to {weekday}.",
    "{first} wants to learn {lang}.",
    "{first}'s favourite food is {food}.",
]

HYPOTHETICALS = [
    "If I lived in {city}, I'd cycle everywhere.",
    "Imagine I'm a {job} — how would I explain this?",
    "Suppose I moved to {city} in {year}, what would rent cost?",
    "What if I had a {pet}?",
    "If I were {age}, I'd go back to school.",
    "Let's say I work at {employer}. How should I negotiate?",
    "Pretend I'm a {nationality} tourist asking for directions.",
    "Hypothetically, if I quit my job, could I afford to travel?",
    "If I had a {car}, I'd drive to {city} every weekend.",
    "Write a story where I'm a {job} in {city}.",
    "Say I'm allergic to {allergen}: what should I avoid?",
    "In this role-play, I'm a {role} at {employer}.",
    "Assume I know nothing about {tool}.",
    "If my {relation} lived in {city}, I'd visit more often.",
    "Were I to move to {city}, would I need a car?",
    "Imagine my name is {first}.",
]

ASSISTANT_ONLY = [
    ("thanks!", "You mentioned you live in {city} and work at {employer}."),
    ("ok", "Noted: you're allergic to {allergen} and you prefer {pref}."),
    ("cool", "I'm a language model, and I live in the cloud. I like helping with {tool}."),
    ("sure", "Your {relation} {first} is a {job} in {city}, right?"),
    ("got it, thanks", "I moved the meeting to {weekday} at {time} as you asked."),
    ("nice", "I have {num} suggestions: first, learn {proglang}."),
]

# ---------------------------------------------------------------------------------------------
# Held-out split: hand-written messages, added after the rules existed and never used to tune
# them. The benchmark reports them apart from the templated corpus, as the more honest estimate
# of how the rules do on wordings nobody wrote them for.
# ---------------------------------------------------------------------------------------------

HELDOUT_STATEMENTS: list[tuple[str, list[F]]] = [
    (
        "I'm a 34 year old accountant from Manchester.",
        [(P, ["34"]), (P, ["accountant"]), (P, ["Manchester"])],
    ),
    ("my husband's called Dev and he's a pilot", [(P, ["Dev"]), (P, ["pilot"])]),
    ("I've lived in Amsterdam since 2019", [(P, ["Amsterdam", "2019"])]),
    ("we have a 6 year old daughter", [(P, ["6", "daughter"])]),
    ("I teach maths at a secondary school in Bristol", [(P, ["maths", "Bristol"])]),
    ("i'm a nurse, i work nights mostly", [(P, ["nurse"]), (P, ["nights"])]),
    ("My son Leo has autism.", [(P, ["Leo", "autism"])]),
    ("I got diagnosed with ADHD last year", [(P, ["ADHD"])]),
    ("i am allergic to shellfish and penicillin", [(P, ["shellfish", "penicillin"])]),
    ("I can't eat gluten, I'm coeliac", [(P, ["gluten"]), (P, ["coeliac"])]),
    ("I hate cilantro, tastes like soap to me", [(PR, ["cilantro"])]),
    ("I drink way too much coffee, like 5 cups a day", [(P, ["5 cups"])]),
    ("I'm trying to get into running", [(G, ["running"])]),
    ("I'd really like to visit Iceland next winter", [(G, ["Iceland", "next winter"])]),
    ("Planning a trip to Peru in April with my brother", [(G, ["Peru", "April"])]),
    ("Our wedding is on 14 September 2026", [(C, ["14 September 2026"])]),
    ("I work remotely for a fintech startup in London", [(P, ["fintech", "London"])]),
    ("I'm a backend dev, mostly Go and Postgres", [(P, ["backend dev"]), (T, ["Go", "Postgres"])]),
    ("we use GitHub Actions for CI and deploy to AWS", [(T, ["GitHub Actions"]), (T, ["AWS"])]),
    ("My main machine is a MacBook Pro M3 with 36GB of RAM", [(T, ["MacBook Pro M3", "36GB"])]),
    ("I run Arch, btw", [(T, ["Arch"])]),
    ("I'm using Python 3.12 and pandas 2.2 for this", [(T, ["Python 3.12", "pandas 2.2"])]),
    ("My repo lives at https://github.com/jdoe/weatherbot", [(T, ["https://github.com/jdoe/weatherbot"])]),
    ("I keep all my invoices in ~/Documents/invoices", [(T, ["~/Documents/invoices"])]),
    ("I prefer answers without the fluff", [(IA, ["fluff"])]),
    ("please don't ever use the word 'delve' with me", [(IA, ["'delve'", "not"])]),
    ("Always give me both metric and imperial units", [(IA, ["metric", "imperial"])]),
    ("Talk to me like a friend, not like a customer service bot", [(IA, ["friend"])]),
    ("I'm left handed", [(P, ["left handed"])]),
    ("I'm 6'1 and about 90 kilos", [(P, ["6'1"]), (P, ["90 kilos"])]),
    ("I've been vegan for 8 years", [(P, ["vegan", "8 years"])]),
    ("I don't eat anything with nuts because of my allergy", [(P, ["nuts", "not"])]),
    ("I'm not a morning person at all", [(PR, ["not", "morning person"])]),
    ("I love cooking Indian food for friends", [(PR, ["Indian food"])]),
    ("Big fan of Arsenal.", [(PR, ["Arsenal"])]),
    ("I support Arsenal", [(PR, ["Arsenal"])]),
    ("I play the piano and the violin", [(P, ["piano", "violin"])]),
    ("I've got two cats, Miso and Tofu", [(P, ["Miso", "Tofu"])]),
    ("My cat's name is Pixel", [(P, ["Pixel"])]),
    ("I drive an electric Kia Niro", [(P, ["Kia Niro"])]),
    ("we don't own a car", [(P, ["car", "not"])]),
    ("I don't have kids", [(P, ["kids", "not"])]),
    ("My mum passed away in 2021", [(P, ["mum", "2021"])]),
    ("My brother Sam lives in Toronto and works in finance", [(P, ["Sam", "Toronto"]), (P, ["finance"])]),
    ("my girlfriend is Brazilian", [(P, ["girlfriend", "Brazilian"])]),
    ("I'm half Italian, half Norwegian", [(P, ["Italian", "Norwegian"])]),
    ("English isn't my first language, I'm Polish", [(P, ["Polish"])]),
    ("I speak a little Japanese", [(P, ["Japanese"])]),
    ("I'm currently unemployed and looking for work in marketing", [(P, ["unemployed"])]),
    ("I just graduated with a degree in biology", [(P, ["biology"])]),
    ("I'm doing a master's in data science at Imperial", [(P, ["data science", "Imperial"])]),
    ("I have a PhD in chemistry", [(P, ["PhD", "chemistry"])]),
    ("I wake up at 5:45 every weekday", [(P, ["5:45"])]),
    ("I usually go to bed around 11pm", [(P, ["11pm"])]),
    ("I work 9 to 5, Monday to Friday", [(P, ["9 to 5"])]),
    ("I get paid on the 25th of each month", [(P, ["25th"])]),
    ("My rent is 1,400 euros a month", [(P, ["1,400"])]),
    ("My budget for the new laptop is $1500", [(C, ["$1500"])]),
    (
        "I'm saving for a house deposit, aiming for £30k by 2027",
        [(G, ["house deposit"]), (G, ["£30k", "2027"])],
    ),
    ("Goal for this year: run a half marathon under 2 hours", [(G, ["half marathon", "2 hours"])]),
    ("I want to get better at public speaking", [(G, ["public speaking"])]),
    ("I'm hoping to switch to a four-day week", [(G, ["four-day week"])]),
    ("I'm thinking about moving to Spain", [(G, ["Spain"])]),
    ("Next year we're planning to have a baby", [(G, ["baby"])]),
    ("I'm learning to play chess", [(G, ["chess"])]),
    ("I started learning Korean in March", [(G, ["Korean", "March"])]),
    ("I go swimming every Saturday morning", [(P, ["swimming", "Saturday"])]),
    ("I cycle to work most days", [(P, ["cycle"])]),
    ("I meditate for 20 minutes each morning", [(P, ["20 minutes"])]),
    ("I'm on antidepressants", [(P, ["antidepressants"])]),
    ("I have a peanut allergy, it's quite serious", [(P, ["peanut"])]),
    ("I have type 1 diabetes so I need to watch my carbs", [(P, ["type 1 diabetes"])]),
    ("I had a baby in January!", [(P, ["baby", "January"])]),
    ("I'm 7 months pregnant", [(P, ["7 months", "pregnant"])]),
    ("I'm recovering from knee surgery", [(C, ["knee surgery"])]),
    ("I'm on parental leave until October", [(C, ["parental leave", "October"])]),
    ("I'm in Tokyo for work until Friday", [(C, ["Tokyo", "Friday"])]),
    ("I've got exams all of next week", [(C, ["exams", "next week"])]),
    ("I have a big presentation on Thursday at 10", [(C, ["presentation", "Thursday"])]),
    ("I'm flying to Boston tomorrow morning", [(C, ["Boston"])]),
    ("My birthday's on the 3rd of May", [(P, ["3rd of May"])]),
    ("I was born on 12 March 1990", [(P, ["12 March 1990"])]),
    ("I turned 50 this year", [(P, ["50"])]),
    ("I'm turning 30 next month", [(P, ["30"])]),
    ("My pronouns are they/them", [(P, ["they/them"])]),
    ("I'm a huge Star Wars nerd", [(PR, ["Star Wars"])]),
    ("I really like minimalist design", [(PR, ["minimalist design"])]),
    ("I'm not really into sports", [(PR, ["sports", "not"])]),
    ("Horror movies aren't my thing", [(PR, ["horror", "not"])]),
    ("I find podcasts boring", [(PR, ["podcasts", "boring"])]),
    ("I'm obsessed with sourdough lately", [(PR, ["sourdough"])]),
    ("My go-to drink is a gin and tonic", [(PR, ["gin and tonic"])]),
    ("i always order the vegetarian option", [(PR, ["vegetarian", "always"])]),
    ("I never drink on weeknights", [(PR, ["never", "weeknights"])]),
    ("When we talk about money, please use euros", [(IA, ["euros"])]),
    ("Keep replies under 100 words please", [(IA, ["100 words"])]),
    ("I'd prefer you didn't use bullet points", [(IA, ["bullet points"])]),
    ("Respond in Portuguese from now on", [(IA, ["Portuguese"])]),
    ("You don't need to apologise all the time", [(IA, ["apologise"])]),
    ("My name is Sarah but everyone calls me Sal", [(P, ["Sarah"]), (P, ["Sal"])]),
    ("Sarah here, by the way", [(P, ["Sarah"])]),
    (
        "I'm Joe, a 28-year-old designer from Cork",
        [(P, ["Joe"]), (P, ["28"]), (P, ["designer"]), (P, ["Cork"])],
    ),
    ("we live in a small flat in Hackney with our dog Bruno", [(P, ["Hackney"]), (P, ["Bruno"])]),
    ("We moved from Chicago to Denver last summer", [(P, ["Chicago", "Denver", "last summer"])]),
    ("I've just moved into a new place in Leith", [(P, ["Leith"])]),
    ("I live about 20 minutes from Cambridge", [(P, ["20 minutes", "Cambridge"])]),
    ("I'm Australian but live in Singapore", [(P, ["Australian"]), (P, ["Singapore"])]),
    ("i'm from lagos originally", [(P, ["lagos"])]),
    ("I work in HR at a hospital", [(P, ["HR", "hospital"])]),
    ("I'm the head chef at a restaurant called Olea", [(P, ["head chef", "Olea"])]),
    ("I run my own bakery", [(P, ["bakery"])]),
    ("I quit my job at Amazon in June", [(P, ["Amazon", "June"])]),
    ("I've worked at Microsoft for 6 years", [(P, ["Microsoft", "6 years"])]),
    ("I'm a junior developer, been coding for about a year", [(P, ["junior developer"])]),
    ("My team uses Jira and Confluence", [(T, ["Jira", "Confluence"])]),
    ("My website is built with Hugo", [(T, ["Hugo"])]),
    ("I use Obsidian for notes and Todoist for tasks", [(T, ["Obsidian", "Todoist"])]),
    ("I'm on Windows 10 at work but Linux at home", [(T, ["Windows 10"]), (T, ["Linux"])]),
    ("I'm comfortable with SQL but terrible at regex", [(T, ["SQL"]), (T, ["regex"])]),
    ("I studied physics at Oxford", [(P, ["physics", "Oxford"])]),
    ("I've been sober for 3 years", [(P, ["sober", "3 years"])]),
    ("I smoke about 10 a day but want to quit", [(P, ["10 a day"])]),
    ("I'm colour blind", [(P, ["colour blind"])]),
    ("I'm hard of hearing in my left ear", [(P, ["hard of hearing"])]),
    ("I suffer from migraines", [(P, ["migraines"])]),
    ("My daughter's birthday is on June 2nd", [(P, ["daughter", "June 2nd"])]),
    ("My dad is 72 and lives alone in Cork", [(P, ["dad", "72"]), (P, ["Cork"])]),
    ("My wife works at the BBC as a producer", [(P, ["wife", "BBC", "producer"])]),
    ("My kids are 4 and 7", [(P, ["4", "7"])]),
    ("I've got a twin sister called Emma", [(P, ["twin sister", "Emma"])]),
    ("Our anniversary is July 8", [(P, ["anniversary", "July 8"])]),
    ("I have an older brother and a younger sister", [(P, ["older brother", "younger sister"])]),
    ("I'm the oldest of four kids", [(P, ["oldest", "four"])]),
]

HELDOUT_NON_STATEMENTS: list[str] = [
    "lol that's hilarious", "ok thanks, that helps a lot", "hmm, not sure about that", "wait what",
    "can you explain that again?", "what do you think about remote work", "is it safe to eat raw eggs",
    "how long should I boil an egg", "Tell me about the history of Lisbon", "summarize the article below",
    "translate this to Spanish: I have two dogs and a cat", "write a haiku about my cat",
    "give me 5 dinner ideas", "draft a reply saying I'm busy on Friday", "Fix the typo in my last message",
    "rewrite it so it sounds less formal", "my code keeps throwing a TypeError, here it is:",
    "The function returns None when I pass an empty list", "I'm getting a 404 when I call the API",
    "I tried that but it didn't work", "I think the second option is better", "I don't understand step 3",
    "I'm not sure what you mean by that", "I meant Python, not Java", "I love that idea, let's do it",
    "I like the first version more", "I hate to bother you but can you check this again?",
    "I need this done by tomorrow morning", "I want a shorter version", "I have a few more questions",
    "I'm going to paste the error now", "I'll get back to you on that", "I was just wondering if you could help",
    "I'm curious how LLMs work", "I guess so", "My bad, I meant Tuesday",
    "Sorry, I'm tired today, ignore my typos", "My friend says Berlin is better than Munich",
    "My colleague thinks I should learn Rust", "Her name is Maria and she's a doctor",
    "Elon Musk was born in 1971", "The meeting is at 3pm in room 204",
    "Python 3.13 made the GIL optional", "Apparently Lisbon is the sunniest capital in Europe",
    "If I were you I'd take the job", "What if I moved to Canada next year?",
    "Suppose my budget is 500 euros, what laptop would you recommend?",
    "Imagine you're a pirate and I'm your captain", "Let's pretend I'm a customer complaining about a refund",
    "In the story, my character lives in a castle", "Hypothetically, would I need a visa if I'm British?",
    "Should I tell my boss I'm looking for another job?", "Do you think my sister would like this gift?",
    "How much should I tip in the US?", "Can I freeze cooked rice?",
    "Where can I buy good coffee beans in Porto?", "Is my password strong enough: Hunter2!",
    "What's 15% of 240?", "good night, talk tomorrow", "brb", "👍", "yes that's right", "nope",
    "you're right, my mistake", "that's not what I asked",
]  # fmt: skip

NON_STATEMENT_SOURCES: list[tuple[str, list[str]]] = [
    ("smalltalk", SMALL_TALK),
    ("question", QUESTIONS),
    ("instruction", INSTRUCTIONS),
    ("thirdparty", THIRD_PARTY),
    ("hypothetical", HYPOTHETICALS),
]

# fmt: off
STATEMENT_PREFIXES = [
    "btw ", "Oh, and ", "FYI, ", "Just so you know, ", "Hey! ", "For context, ", "Quick note: ",
    "Remember that ", "Also, ", "Fun fact: ", "ok so ", "Honestly, ",
]
# fmt: on
JOINERS = [". ", "! ", " and ", ", and ", "\n", "; ", ". Also, "]

_SLOT_RE = re.compile(r"\{(\w+)(?:\.(\w+))?\}")
_AN_RE = re.compile(r"\b([Aa]) (?=[AEIOaeio])")  # "a Irish tourist" -> "an Irish tourist"


def _fill(template: str, rng: random.Random, values: dict[str, Any]) -> str:
    """Fill every ``{slot}``/``{slot.field}`` of ``template``; ``values`` keeps one choice per slot
    name across the calls of one draw (so the message and its expectations agree)."""

    def choose(name: str) -> Any:
        if name not in values:
            base = re.sub(r"\d+$", "", name)
            taken = {repr(v) for k, v in values.items() if re.sub(r"\d+$", "", k) == base}
            options = [v for v in SLOTS[base] if repr(v) not in taken]
            values[name] = rng.choice(options)
        return values[name]

    def sub(m: re.Match[str]) -> str:
        value = choose(m.group(1))
        if isinstance(value, dict):
            return str(value[m.group(2) or "text"])
        return str(value)

    return _AN_RE.sub(r"\1n ", _SLOT_RE.sub(sub, template))


def _has_slots(template: str) -> bool:
    return bool(_SLOT_RE.search(template))


def _casual(text: str, rng: random.Random, prefixes: bool) -> str:
    """A casual variation: sometimes a prefix, sometimes all lower case, sometimes no final stop."""
    if prefixes and rng.random() < 0.15:
        prefix = rng.choice(STATEMENT_PREFIXES)
        text = prefix + (text[0].lower() + text[1:] if text[:2] not in ("I ", "I'") else text)
    if rng.random() < 0.15:
        text = text.lower()
    if rng.random() < 0.2 and text.endswith("."):
        text = text[:-1]
    return text


def _statement(template: str, facts: list[F], rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    values: dict[str, Any] = {}
    text = _fill(template, rng, values)
    expected = [
        {"category": category, "must_contain": [_fill(m, rng, values) for m in must]}
        for category, must in facts
    ]
    return text, expected


def build(seed: int = SEED, draws: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(row: dict[str, Any]) -> None:
        key = row["user"] + "\x00" + row.get("assistant", "")
        if key not in seen:
            seen.add(key)
            rows.append(row)

    singles: list[tuple[str, str, list[dict[str, Any]]]] = []
    for kind, template, facts in STATEMENTS:
        for _ in range(draws if _has_slots(template) else 1):
            text, expected = _statement(template, facts, rng)
            if kind in COMBINABLE_KINDS and text[:2] in ("I ", "I'", "My"):
                singles.append((kind, text, expected))
            add({"user": _casual(text, rng, prefixes=True), "kind": kind, "expected": expected})

    # several statements in one message
    for _ in range(70):
        parts = rng.sample(singles, rng.choice((2, 2, 2, 3)))
        text = parts[0][1]
        expected = list(parts[0][2])
        for _kind, part, part_expected in parts[1:]:
            joiner = rng.choice(JOINERS)
            body = part.rstrip(".!")
            if joiner in (" and ", ", and ", "; ") or joiner.endswith("Also, "):
                body = body[0].lower() + body[1:] if body.startswith("My") else body
            text = text.rstrip(".!") + joiner + body
            expected.extend(part_expected)
        add({"user": _casual(text + ".", rng, prefixes=False), "kind": "multi", "expected": expected})

    for kind, templates in NON_STATEMENT_SOURCES:
        for template in templates:
            for _ in range(draws if _has_slots(template) else 1):
                text = _fill(template, rng, {})
                add({"user": _casual(text, rng, prefixes=False), "kind": kind, "expected": []})
    for user, assistant in ASSISTANT_ONLY:
        for _ in range(draws):
            values: dict[str, Any] = {}
            add(
                {
                    "user": user,
                    "assistant": _fill(assistant, rng, values),
                    "kind": "assistant",
                    "expected": [],
                }
            )
    for user, facts in HELDOUT_STATEMENTS:
        expected = [{"category": category, "must_contain": list(must)} for category, must in facts]
        add({"user": user, "kind": "heldout", "split": "heldout", "expected": expected})
    for user in HELDOUT_NON_STATEMENTS:
        add({"user": user, "kind": "heldout-non", "split": "heldout", "expected": []})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    rows = build(args.seed)
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    main_rows = [r for r in rows if r.get("split") != "heldout"]
    statements = sum(1 for r in main_rows if r["expected"])
    held = len(rows) - len(main_rows)
    print(
        f"wrote {len(rows)} messages to {args.out}: {statements} statements and {len(main_rows) - statements} "
        f"non-statements from templates, plus {held} held-out messages"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
