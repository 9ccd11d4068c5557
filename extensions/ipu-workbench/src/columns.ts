/**
 * Steps grouped into the columns a chart draws: one column per step while they fit, otherwise runs of
 * neighbouring steps, each drawn as its largest step, so no peak is lost however many steps there are.
 */

export interface Column {
  /** The first and last step (inclusive) the column stands for. */
  first: number;
  last: number;
  /** The step drawn: the one with the largest total in the column (the first of equals). */
  step: number;
}

export function columns(steps: number, total: (step: number) => number, most: number): Column[] {
  const count = Math.min(steps, Math.max(1, Math.floor(most)));
  const result: Column[] = new Array(count);
  for (let c = 0; c < count; c++) {
    const first = Math.floor((c * steps) / count);
    const last = Math.floor(((c + 1) * steps) / count) - 1;
    let step = first;
    let best = total(first);
    for (let s = first + 1; s <= last; s++) {
      const value = total(s);
      if (value > best) {
        best = value;
        step = s;
      }
    }
    result[c] = { first, last, step };
  }
  return result;
}
