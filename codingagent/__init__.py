"""codingagent: drive a coding agent with any chat LLM, offline, by copy-paste."""

__version__ = "0.1.0"
