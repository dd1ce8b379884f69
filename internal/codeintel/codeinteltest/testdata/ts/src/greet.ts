/** Greets someone. */
export interface Greeter {
  greet(name: string): string;
}

/** Greets in English. */
export class English implements Greeter {
  greet(name: string): string {
    return "Hello, " + name;
  }
}

/** Greets name in English. */
export function greet(name: string): string {
  return new English().greet(name);
}
