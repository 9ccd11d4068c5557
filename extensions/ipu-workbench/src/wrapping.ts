/**
 * The one rule by which a picture's layers too wide for its output wrap into rows, as lines of text wrap, by
 * the steps of the Python side's `workbench/export/wrapping.py` (a test compares the two): the grouped
 * pictures (`compose.ts`) and the Graph tab (`elklayout.ts`) wrap by it, as the notebook's pictures do.
 * `bandRows` wraps a run of consecutive layers that are all too wide as one, in bands one under another, each
 * band holding a row of every layer of the run, so that the chains of a run (for each of 24 weights, an
 * all-reduce and the update it feeds) wrap together and their edges stay short.
 */

/**
 * The row of each of a layer's boxes (`widths`, in order): each row takes boxes in order while they fit side
 * by side, `gap` apart, within `room` (a box wider than `room` takes a row alone).
 */
export function wrapRows(widths: readonly number[], room: number, gap: number): number[] {
  const rows: number[] = [];
  let row = 0;
  let used = -gap;
  for (const width of widths) {
    if (used > 0 && used + gap + width > room) {
      row += 1;
      used = -gap;
    }
    used += gap + width;
    rows.push(row);
  }
  return rows;
}

/**
 * The row of every item of `layers` (each a layer's items in order; `widths` of each, and the items that feed
 * each, `predecessors`) once the layers too wide for `room` are wrapped. A layer that fits is one row. In a run
 * of layers too wide, the first wraps by `wrapRows`; in each layer after it, an item fed by an item of the layer
 * above that feeds no other item of its layer goes in that item's band, and the others wrap by `wrapRows` from
 * the first band. Rows are numbered from the top, band by band, layer by layer within a band.
 */
export function bandRows(layers: readonly (readonly string[])[], widths: ReadonlyMap<string, number>,
  predecessors: ReadonlyMap<string, readonly string[]>, room: number, gap: number): Map<string, number> {
  const rows = new Map<string, number>();
  const wrapped = (items: readonly string[]) => wrapRows(items.map(item => widths.get(item)!), room, gap);
  const fits = (items: readonly string[]) => wrapped(items).every(row => row === 0);
  let first = 0;
  for (let start = 0; start < layers.length;) {
    let end = start + 1;
    while (!fits(layers[start]) && end < layers.length && !fits(layers[end])) {
      end += 1;
    }
    const band = new Map<string, number>();
    wrapped(layers[start]).forEach((row, i) => band.set(layers[start][i], row));
    for (let level = start + 1; level < end; level++) {
      const above = new Set(layers[level - 1]);
      const leader = (item: string) => (predecessors.get(item) ?? []).find(p => above.has(p));
      const fed = new Map<string, number>();
      for (const item of layers[level]) {
        for (const p of new Set((predecessors.get(item) ?? []).filter(p => above.has(p)))) {
          fed.set(p, (fed.get(p) ?? 0) + 1);
        }
      }
      const rest: string[] = [];
      for (const item of layers[level]) {
        const key = leader(item);
        if (key !== undefined && fed.get(key) === 1) {
          band.set(item, band.get(key)!);
        } else {
          rest.push(item);
        }
      }
      wrapped(rest).forEach((row, i) => band.set(rest[i], row));
    }
    const span = end - start;
    for (let level = start; level < end; level++) {
      for (const item of layers[level]) {
        rows.set(item, first + band.get(item)! * span + level - start);
      }
    }
    first += (Math.max(0, ...band.values()) + 1) * span;
    start = end;
  }
  return rows;
}
