import { greet } from "./greet.js";
import { Store } from "./store.js";

const s = new Store();
s.add({ name: "tea", price: 3 });
console.log(greet("world"), s.total());
