/** One thing for sale. */
export interface Item {
  name: string;
  price: number;
}

/** Holds items. */
export class Store {
  private items: Item[] = [];

  /** Adds an item. */
  add(item: Item): void {
    if (item.name === "") {
      throw new Error("an item needs a name");
    }
    this.items.push(item);
  }

  /** The sum of the prices. */
  total(): number {
    return this.items.reduce((t, it) => t + it.price, 0);
  }
}
