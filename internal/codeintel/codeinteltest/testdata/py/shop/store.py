"""Keeps items."""

from dataclasses import dataclass, field


@dataclass
class Item:
    """One thing for sale."""

    name: str
    price: int


@dataclass
class Store:
    """Holds items."""

    items: list[Item] = field(default_factory=list)

    def add(self, item: Item) -> None:
        """Adds an item."""
        if not item.name:
            raise ValueError("an item needs a name")
        self.items.append(item)

    def total(self) -> int:
        """The sum of the prices."""
        return sum(it.price for it in self.items)
