/**
 * Placement of a built layout from the layering the document ships (`graph_layers`, computed once by the
 * Python side, `workbench/export/graph_layers.py`): the layers and the order in each layer are those of the
 * notebook's Graph tab, and placing them takes milliseconds at any size, in the page, with no layout search.
 *
 * Each layer holds its nodes and, for every edge that crosses it, a slot of `SLOT` pixels (the edge's bend),
 * in the order of their columns. A drawing wider than its output wraps its wide layers into bands of rows by
 * the rule the notebook's Graph tab wraps by (`bandRows`, `workbench/export/wrapping.py`); a layer that fits
 * keeps the place its columns give it. Edges are orthogonal: an edge leaves its tail's bottom, moves sideways
 * only in the gaps between rows (each sideways run on its own track of the gap, shared by the edges that run
 * between the same two points), passes a row straight down where no box is in its way, else down a slot of
 * its own or a lane between two boxes, and enters its head's top; so no edge passes through a box.
 */
import { GAP_X, GAP_Y, GraphLayout, HEADER, LayoutNode, PAD, Point } from './layout.js';
import { maxOf } from './numbers.js';
import { bandRows, GRAPH_BAND_MARGIN, wrapRows } from './wrapping.js';

/** Pixels an edge's bend takes in a layer it crosses. */
const SLOT = 6;
/** Pixels between a bend's slot and what lies beside it in its row. */
const SLOT_GAP = 6;
/** Pixels between the sideways runs of edges in one gap between rows. */
const TRACK = 4;
/** A gap between rows grows to hold its runs up to this many pixels. */
const MAX_GAP = 160;
/** Pixels right of a row's last box kept for the lane of edges passing the row there. */
const RIGHT_LANE = 2 * SLOT_GAP;
/** Pixels per column at most: wider boxes push their neighbours right. */
const MAX_COLUMN = 240;

/** Whether `layout`, and every layout expanded inside it, has a layering shipped with the document. */
export function isShipped(layout: GraphLayout): boolean {
  return layout.shipped !== undefined && layout.nodes.every(node => node.inner.every(isShipped));
}

/** One thing of a row: a node, or the bend of edge `edge` in the layer `layer` crosses. */
interface Item {
  key: string;
  node?: LayoutNode;
  edge?: number;
  width: number;
  col: number;
  layer: number;
}

/**
 * Places `layout` (shipped: `isShipped`) and the layouts expanded in it: positions, sizes and edge routes.
 * Where it is wider than `room` pixels (0: any width will do), its wide layers wrap into bands of rows.
 */
export function placeShipped(layout: GraphLayout, room = 0): void {
  for (const node of layout.nodes) {
    if (node.inner.length === 0) {
      continue;
    }
    let x = PAD;
    for (const child of node.inner) {
      placeShipped(child, room > 0 ? Math.max(room - 4 * PAD, 1) : 0);
      child.x = x;
      child.y = HEADER;
      x += child.width + GAP_X;
    }
    node.width = Math.max(node.width, x - GAP_X + PAD);
    node.height = HEADER + maxOf(node.inner, child => child.height, 0) + PAD;
  }
  const items = layerItems(layout);
  const unit = columnWidth(layout.nodes);
  const byLayer = new Map<number, Item[]>();
  items.forEach(item => (byLayer.get(item.layer) ?? byLayer.set(item.layer, []).get(item.layer)!).push(item));
  const layers = [...byLayer.keys()].sort((a, b) => a - b).map(layer =>
    byLayer.get(layer)!.sort((a, b) => a.col - b.col || Number(a.edge !== undefined) - Number(b.edge !== undefined)));
  const xs = new Map<string, number>();
  for (const layer of layers) {
    let reach = PAD - GAP_X;
    let before: Item | undefined;
    for (const item of layer) {
      const x = Math.max(PAD + item.col * unit + (unit - item.width) / 2, reach + gap(before, item));
      xs.set(item.key, x);
      reach = x + item.width;
      before = item;
    }
  }
  const wide = maxOf(items, item => xs.get(item.key)! + item.width, 0) + PAD + RIGHT_LANE;
  const band = room - GRAPH_BAND_MARGIN;
  const widths = new Map(items.map(item => [item.key, wrapWidth(layout, item)]));
  const tooWide = (layer: Item[]) => wrapRows(layer.map(item => widths.get(item.key)!), band, GAP_X).some(row => row > 0);
  layout.wrapped = room > 0 && (wide > room || layers.some(tooWide));
  route(layout, layout.wrapped ? wrapped(layers, layout, room - RIGHT_LANE, band, widths, wide, xs) : layers, xs);
  layout.engine = 'shipped';
}

/** The nodes and edge bends of `layout` with their layers and columns. */
function layerItems(layout: GraphLayout): Item[] {
  const items: Item[] = [];
  for (const node of layout.nodes) {
    const [layer, col] = layout.shipped!.get(node.key)!;
    items.push({ key: node.key, node, width: node.width, col, layer });
  }
  layout.edges.forEach((edge, number) => (edge.bends ?? []).forEach(([col, layer], i) =>
    items.push({ key: bendKey(number, i), edge: number, width: SLOT, col, layer })));
  return items;
}

/** The pixels `item` takes in a row of a wrapped layer: a node's shipped width where larger than its box. */
function wrapWidth(layout: GraphLayout, item: Item): number {
  return item.node ? Math.max(item.width, layout.wraps?.get(item.key) ?? 0) : item.width;
}

function bendKey(edge: number, bend: number): string {
  return `~${edge}~${bend}`;
}

/** The pixels between two neighbours of a row: less beside a bend. */
function gap(before: Item | undefined, item: Item): number {
  return before === undefined ? GAP_X : before.node && item.node ? GAP_X : SLOT_GAP;
}

/** Pixels per column: the middle box's width and a gap, at most `MAX_COLUMN`. */
function columnWidth(nodes: LayoutNode[]): number {
  const widths = nodes.map(node => node.width).sort((a, b) => a - b);
  return Math.min(MAX_COLUMN, (widths[Math.floor(widths.length / 2)] ?? 0) + GAP_X);
}

/**
 * The rows of `layers` wrapped by `bandRows` to `band` pixels, each item taking its `widths` there, each row's
 * items in order, and their left edges in `xs`: a layer that fits keeps the place its columns gave it, drawn
 * closer by the ratio of `room` to the width `wide` of the drawing unwrapped (moved left as far as it must to
 * fit).
 */
function wrapped(layers: Item[][], layout: GraphLayout, room: number, band: number, widths: Map<string, number>, wide: number,
  xs: Map<string, number>): Item[][] {
  const closer = Math.min(1, (room - 2 * PAD) / Math.max(wide - 2 * PAD, 1));
  const predecessors = new Map<string, string[]>();
  const add = (after: string, before: string) =>
    (predecessors.get(after) ?? predecessors.set(after, []).get(after)!).push(before);
  layout.edges.forEach((edge, number) => {
    const chain = [edge.from, ...(edge.bends ?? []).map((_, i) => bendKey(number, i)), edge.to];
    chain.slice(1).forEach((key, i) => add(key, chain[i]));
  });
  const keys = layers.map(layer => layer.map(item => item.key));
  const { rows, lefts } = bandRows(keys, widths, predecessors, band, GAP_X);
  const numbers = [...new Set(rows.values())].sort((a, b) => a - b);
  const rowOf = new Map(numbers.map((row, i) => [row, i]));
  const result: Item[][] = numbers.map(() => []);
  for (const layer of layers) {
    for (const item of layer) {
      result[rowOf.get(rows.get(item.key)!)!].push(item);
    }
    const row = new Set(layer.map(item => rows.get(item.key)));
    if (row.size === 1) {  // a layer that fits keeps its place, its columns drawn closer as the wide layers were
      let reach = -Infinity;
      let before: Item | undefined;
      for (const item of layer) {
        const x = Math.max(PAD + (xs.get(item.key)! - PAD) * closer, reach + gap(before, item));
        xs.set(item.key, x);
        reach = x + item.width;
        before = item;
      }
      const shift = Math.min(0, room - PAD - reach);
      layer.forEach(item => xs.set(item.key, xs.get(item.key)! + shift));
      if (xs.get(layer[0].key)! < PAD) {  // too wide with its gaps: packed as wrapped
        layer.forEach(item => xs.set(item.key, PAD + lefts.get(item.key)!));
      }
    } else {
      layer.forEach(item => xs.set(item.key, PAD + lefts.get(item.key)!));
    }
  }
  for (const row of result) {  // packed with one gap between any two neighbours, bends too
    row.sort((a, b) => xs.get(a.key)! - xs.get(b.key)!);
  }
  return result.filter(row => row.length > 0);
}

/**
 * Sets the nodes' positions from `rows` (top to bottom) and `xs`, and each edge's route: down from its
 * tail, sideways in the gaps between rows, down its bends' slots or the nearest lane of each row it passes,
 * into its head.
 */
function route(layout: GraphLayout, rows: Item[][], xs: Map<string, number>): void {
  const rowOf = new Map<string, number>();
  rows.forEach((row, number) => row.forEach(item => rowOf.set(item.key, number)));
  const heights = rows.map(row => maxOf(row, item => item.node?.height ?? 0, 0));
  /** Per row: the x of each lane an edge may pass it by, left to right. */
  const boxesOf = rows.map(row => row.filter(item => item.node !== undefined)
    .map(item => [xs.get(item.key)!, xs.get(item.key)! + item.width]).sort((a, b) => a[0] - b[0]));
  const lanes = boxesOf.map(boxes => {
    const free: number[] = [];
    let reach = PAD / 2;
    for (const [left, right] of boxes) {
      if (left - reach >= 2) {
        free.push(boxes.length && reach === PAD / 2 ? Math.min(left - SLOT_GAP, (reach + left) / 2) : (reach + left) / 2);
      }
      reach = Math.max(reach, right);
    }
    free.push(reach + SLOT_GAP);
    return free;
  });
  const byKey = new Map(layout.nodes.map(node => [node.key, node]));
  const centre = (key: string) => xs.get(key)! + (byKey.get(key)?.width ?? SLOT) / 2;
  /** Each edge's waypoints: [x, row] of its tail, of every row it passes and of its head. */
  const ways = layout.edges.map((edge, number) => {
    const chain = [edge.from, ...(edge.bends ?? []).map((_, i) => bendKey(number, i)), edge.to];
    const points: [number, number][] = [[centre(chain[0]), rowOf.get(chain[0])!]];
    for (const key of chain.slice(1)) {
      const row = rowOf.get(key)!;
      for (let passed = points[points.length - 1][1] + 1; passed < row; passed++) {
        const x = points[points.length - 1][0];
        points.push([clear(boxesOf[passed], x) ? x : nearest(lanes[passed], x), passed]);
      }
      points.push([centre(key), row]);
    }
    return points;
  });
  /** Per gap under a row: its tracks, one for each run from one x to another (edges that run alike share one). */
  const runs = rows.map(() => 0);
  const shared = new Map<string, number>();
  const tracks = ways.map(points => points.slice(1).map(([x, row], i) => {
    const [x0, row0] = points[i];
    if (Math.abs(x - x0) <= 0.5 || row <= row0) {
      return -1;
    }
    const run = `${row0}:${x0.toFixed(1)}:${x.toFixed(1)}`;
    return shared.get(run) ?? shared.set(run, runs[row0]++).get(run)!;
  }));
  const gaps = runs.map(count => Math.min(MAX_GAP, Math.max(GAP_Y, (count + 1) * TRACK)));
  const tops: number[] = [];
  let y = PAD;
  rows.forEach((_, number) => {
    tops.push(y);
    y += heights[number] + gaps[number];
  });
  for (const item of rows.flat()) {
    if (item.node) {
      item.node.x = xs.get(item.key)!;
      item.node.y = tops[rowOf.get(item.key)!];
    }
  }
  layout.edges.forEach((edge, number) => {
    const points = ways[number];
    const tail = byKey.get(edge.from)!;
    const head = byKey.get(edge.to)!;
    const path: Point[] = [{ x: points[0][0], y: tail.y + tail.height }];
    points.slice(1).forEach(([x, row], i) => {
      const [x0, row0] = points[i];
      const track = tracks[number][i];
      if (track >= 0) {
        const under = tops[row0] + heights[row0];
        const trackY = under + (gaps[row0] * (track + 1)) / (runs[row0] + 1);
        path.push({ x: x0, y: trackY }, { x, y: trackY });
      }
      path.push({ x, y: i === points.length - 2 ? head.y : tops[row] + heights[row] });
    });
    edge.points = simplified(path);
  });
  const right = maxOf(layout.nodes, node => node.x + node.width, 0);
  const lanesRight = maxOf(layout.edges.flatMap(edge => edge.points), point => point.x, 0);
  layout.width = Math.max(Math.max(right, lanesRight) + PAD, layout.minWidth, 2 * PAD + 56);
  layout.height = rows.length ? y - gaps[rows.length - 1] + PAD : 2 * PAD + 26;
}

/** Whether a vertical run at `x` passes `boxes` (a row's, as [left, right]) at least `SLOT_GAP` pixels from each. */
function clear(boxes: number[][], x: number): boolean {
  return boxes.every(([left, right]) => x < left - SLOT_GAP || x > right + SLOT_GAP);
}

/** The lane of `lanes` (sorted) nearest `x`. */
function nearest(lanes: number[], x: number): number {
  let best = lanes[0];
  for (const lane of lanes) {
    if (Math.abs(lane - x) < Math.abs(best - x)) {
      best = lane;
    }
  }
  return best;
}

/** `points` without repeats and without points in the middle of a straight run. */
function simplified(points: Point[]): Point[] {
  const kept: Point[] = [];
  for (const point of points) {
    const last = kept[kept.length - 1];
    if (last !== undefined && Math.abs(last.x - point.x) < 0.01 && Math.abs(last.y - point.y) < 0.01) {
      continue;
    }
    const before = kept[kept.length - 2];
    if (before !== undefined && last !== undefined &&
      ((Math.abs(before.x - last.x) < 0.01 && Math.abs(last.x - point.x) < 0.01) ||
       (Math.abs(before.y - last.y) < 0.01 && Math.abs(last.y - point.y) < 0.01))) {
      kept[kept.length - 1] = point;
      continue;
    }
    kept.push(point);
  }
  return kept.length >= 2 ? kept : [points[0], points[points.length - 1]];
}
