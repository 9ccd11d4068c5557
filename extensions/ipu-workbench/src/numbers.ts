/**
 * Loops over number lists. `Math.max(...values)` passes every value as an argument and overflows the
 * stack above about a hundred thousand values; these never do.
 */

/** The largest of `values` (mapped by `of`), or `empty` when there are none. */
export function maxOf<T>(values: ArrayLike<T>, of: (value: T, index: number) => number, empty = -Infinity): number {
  let best = empty;
  for (let i = 0; i < values.length; i++) {
    const value = of(values[i], i);
    if (value > best) {
      best = value;
    }
  }
  return best;
}
