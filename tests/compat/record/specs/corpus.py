# Shared by specs that `exec` it: a small corpus of short texts (animals, gardens, honey) whose
# terms repeat across documents, for scoring and term statistics, and a second index's worth.

GARDEN = [
    {"title": "the quick brown fox", "body": "foxes jumping over lazy dogs in the garden", "tag": "animal"},
    {"title": "quick brown dogs", "body": "dogs are running quickly and jumping over the fence", "tag": "animal"},
    {"title": "lazy cat sleeping", "body": "a cat sleeps all day long in the garden", "tag": "pet"},
    {"title": "brown bear", "body": "bears are brown and big, they eat fish and honey", "tag": "animal"},
    {"title": "quick quick quick", "body": "speed is everything for a quick fox and a quick dog", "tag": "speed"},
    {"title": "garden flowers", "body": "flowers in the garden attract bees and the bees make honey", "tag": "plant"},
    {"title": "the lazy dog", "body": "the dog sleeps in the garden next to the lazy cat", "tag": "pet"},
    {"title": "brown honey bees", "body": "bees make brown honey in the summer garden", "tag": ["plant", "animal"]},
    {"title": "fox and the hound", "body": "a fox and a dog become friends in the forest", "tag": "animal"},
    {"title": "quick lunch", "body": "a quick lunch of bread and honey in the garden", "tag": "food"},
]
GARDEN_OTHER = [
    {"title": "alpha beta", "body": "alpha beta gamma", "tag": "greek"},
    {"title": "garden party", "body": "a party in the garden with honey cake", "tag": "party"},
    {"title": "beta release", "body": "the beta release of the garden planner", "tag": "software"},
]
