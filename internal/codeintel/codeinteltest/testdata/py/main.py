from shop.greet import greet
from shop.store import Item, Store

s = Store()
s.add(Item(name="tea", price=3))
print(greet("world"), s.total())
