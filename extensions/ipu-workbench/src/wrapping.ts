/**
 * The one rule by which a picture's layers too wide for its output wrap into rows, as lines of text wrap, by
 * the steps of the Python side's `workbench/export/wrapping.py` (a test compares the two): the grouped
 * pictures (`compose.ts`) and the Graph tab (`shippedlayout.ts`, or `elklayout.ts` for a document without
 * the `graph_layers` section) wrap by it, as the notebook's pictures do.
 * `bandRows` wraps a run of consecutive layers that are all too wide as one, in bands one under another, each
 * band holding a row of every layer of the run, so that the chains of a run (for each of 24 weights, an
 * all-reduce and the update it feeds) wrap together and their edges stay short.
 */

/**
 * Pixels of an output's width that the rows of a wrapped Graph tab leave free (`GRAPH_BAND_MARGIN` of
 * `wrapping.py`): the notebook and the extension wrap a graph to its output's width less this, by the widths the
 * document ships, into the same bands.
 */
export const GRAPH_BAND_MARGIN = 40;

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
 * each, `predecessors`) once the layers too wide for `room` are wrapped, and its left edge in its row. A layer
 * that fits is one row. A run of layers too wide wraps as one. Chains start at the run's first layer; an item
 * of a later layer joins the chain of its first feeder in the layer above where that feeder is in a chain and
 * feeds no other item of the layer. The first layer wraps by `wrapRows`, each of its items as wide as the
 * widest of its chain, and each chain takes its first item's band and left edge; the items in no chain wrap by
 * `wrapRows`, each layer's in bands after all bands before them. Where an edge would then point up, the run's
 * layers wrap one after another instead. Rows are numbered from the top, band by band, layer by layer within a
 * band.
 */
export function bandRows(layers: readonly (readonly string[])[], widths: ReadonlyMap<string, number>,
  predecessors: ReadonlyMap<string, readonly string[]>, room: number, gap: number): { rows: Map<string, number>; lefts: Map<string, number> } {
  const rows = new Map<string, number>();
  const lefts = new Map<string, number>();
  /** Wraps `items` into rows `step` apart from `firstRow`; gives the number of rows. */
  const place = (items: readonly string[], width: (item: string) => number, firstRow: number, step: number): number => {
    let left = 0;
    let last = -1;
    wrapRows(items.map(width), room, gap).forEach((row, i) => {
      if (row !== last) {
        left = 0;
        last = row;
      }
      rows.set(items[i], firstRow + row * step);
      lefts.set(items[i], left);
      left += width(items[i]) + gap;
    });
    return last + 1;
  };
  const width = (item: string) => widths.get(item)!;
  const fits = (items: readonly string[]) => wrapRows(items.map(width), room, gap).every(row => row === 0);
  let first = 0;
  for (let start = 0; start < layers.length;) {
    let end = start + 1;
    while (!fits(layers[start]) && end < layers.length && !fits(layers[end])) {
      end += 1;
    }
    const run = layers.slice(start, end);
    const root = new Map(run[0].map(item => [item, item]));
    for (let level = 1; level < run.length; level++) {
      const above = new Set(run[level - 1]);
      const fed = new Map<string, number>();
      for (const item of run[level]) {
        for (const p of new Set((predecessors.get(item) ?? []).filter(p => above.has(p)))) {
          fed.set(p, (fed.get(p) ?? 0) + 1);
        }
      }
      for (const item of run[level]) {
        const leader = (predecessors.get(item) ?? []).find(p => above.has(p));
        if (leader !== undefined && root.has(leader) && fed.get(leader) === 1) {
          root.set(item, root.get(leader)!);
        }
      }
    }
    const cell = new Map<string, number>();
    root.forEach((chain, item) => cell.set(chain, Math.max(cell.get(chain) ?? 0, width(item))));
    let span = run.length;
    let bands = place(run[0], item => cell.get(item)!, first, span);
    for (let level = 1; level < run.length; level++) {
      for (const item of run[level]) {
        const chain = root.get(item);
        if (chain !== undefined) {
          rows.set(item, rows.get(chain)! + level);
          lefts.set(item, lefts.get(chain)!);
        }
      }
      bands += place(run[level].filter(item => !root.has(item)), width, first + bands * span + level, span);
    }
    const members = new Set(run.flat());
    if ([...members].some(item => (predecessors.get(item) ?? []).some(p => members.has(p) && rows.get(p)! >= rows.get(item)!))) {
      bands = 0;  // an edge would point up: the run's layers wrap one after another instead
      span = 1;
      for (const layer of run) {
        bands += place(layer, width, first + bands, 1);
      }
    }
    first += bands * span;
    start = end;
  }
  return { rows, lefts };
}
