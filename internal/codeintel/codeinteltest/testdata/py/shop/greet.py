"""Says hello."""


class English:
    """Greets in English."""

    def greet(self, name: str) -> str:
        return "Hello, " + name


def greet(name: str) -> str:
    """Greets name in English."""
    return English().greet(name)
