"""The code the task points at (docs/prompts.md, "The code the task points at"): the
evidence, the definitions it points at, and the section of a first prompt that shows them."""
