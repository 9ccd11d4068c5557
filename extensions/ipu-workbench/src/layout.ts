/**
 * What the graph view draws of one graph, and the plain layered placement it falls back to. Ops run top
 * to bottom in data-flow order, the graph's inputs above them, its outputs below; variables and constants
 * are folded into the boxes of the ops that read them, a line each, where the document has grouped pictures
 * (else they are nodes too). A call op that is expanded becomes a compound node holding the drawings of the
 * graphs it calls, side by side. `buildLayout` makes the nodes and edges, sized to their labels. Where the
 * document ships a graph's layering (`graph_layers`, the notebook's Graph tab's nodes and layers), the nodes
 * are those it names, each with its layer and column, and `shippedlayout.ts` places them in milliseconds;
 * else ELK (elklayout.ts) or `placeInLayers` gives them positions and the edges their routes.
 */
import { GraphRecord, IrIndex, OpRecord, TensorRecord } from './model.js';
import { estimateWidth, shorten, TextWidth } from './measure.js';
import { GraphLayering } from './generated/document.js';
import { maxOf } from './numbers.js';
import { frameLabel, opLabel } from './visual.js';

export const NODE_HEIGHT = 26;
/** Pixels per line of a folded weight under an op's label. */
export const SUBLINE_HEIGHT = 14;
/** Calls nest at most this deep in one drawing (a call cycle in a broken IR stops here). */
export const MAX_DEPTH = 8;
/** Space between a label and the sides of its box, and around the nodes of a graph. */
export const PAD = 12;
/** Space above an expanded call's frames for the call's label and the frames' titles. */
export const HEADER = 40;
export const GAP_X = 18;
export const GAP_Y = 36;
const MIN_NODE_WIDTH = 56;

export type NodeKind = 'op' | 'input' | 'variable' | 'constant' | 'output';

export interface Point {
  x: number;
  y: number;
}

export interface LayoutNode {
  key: string;
  kind: NodeKind;
  label: string;
  /** The op's folded weights and constants, a line each under its label (`W ⟨64×3×7×7⟩`). */
  sublines: string[];
  width: number;
  height: number;
  x: number;
  y: number;
  layer: number;
  op?: OpRecord;
  tensor?: TensorRecord;
  /** The called graphs' layouts when this call op is expanded, placed inside the node. */
  inner: GraphLayout[];
}

export interface LayoutEdge {
  from: string;
  to: string;
  /** The tensor carried, or null for an ordering-only (`in_sequence`) edge. */
  tensor: TensorRecord | null;
  /** The route from `from` to `to` in the coordinates of the layout holding the edge; set by placement. */
  points: Point[];
  /** The (column, layer) of each layer the edge crosses, where the document ships the graph's layering. */
  bends?: [number, number][];
}

/**
 * Who placed a layout: the layering the document ships (`shippedlayout.ts`) or ELK, whose edges bend around
 * nodes, or the plain layering, whose edges are curves.
 */
export type LayoutEngine = 'shipped' | 'elk' | 'layers';

export interface GraphLayout {
  graph: GraphRecord;
  /** For the body of an expanded call: how it is called ('call: body', 'repeat ×3: body'). */
  title: string;
  /** The least width that holds the title. */
  minWidth: number;
  /** Prefix of every node key in this expansion: one graph may be shown several times. */
  path: string;
  nodes: LayoutNode[];
  edges: LayoutEdge[];
  width: number;
  height: number;
  x: number;
  y: number;
  engine: LayoutEngine;
  /** Whether its wide layers were wrapped into rows to fit the width of its output. */
  wrapped: boolean;
  /** The layer and column of each node (by key) where the document ships the graph's layering. */
  shipped?: Map<string, [number, number]>;
  /** The pixels each node takes in a row of a wrapped layer, where the document ships them (as the notebook's). */
  wraps?: Map<string, number>;
}

/** The key of the node of `id` (an op or tensor id) in the expansion at `path`. */
export function nodeKey(path: string, id: string): string {
  return `${path}|${id}`;
}

/** The width of a box holding `label` (bold for a call op), with PAD each side. */
export function boxWidth(label: string, bold: boolean, width: TextWidth): number {
  return Math.max(MIN_NODE_WIDTH, Math.ceil(width(shorten(label), bold)) + 2 * PAD);
}

/** `buildLayout` then `placeInLayers`: the plain layered drawing of `graphId`. */
export function layoutGraph(index: IrIndex, graphId: string, expanded: ReadonlySet<string>, width: TextWidth = estimateWidth): GraphLayout {
  const layout = buildLayout(index, graphId, expanded, width);
  placeInLayers(layout);
  return layout;
}

/** The nodes and edges of `graphId`, sized but not placed; call ops whose node key is in `expanded` hold their callees. */
export function buildLayout(index: IrIndex, graphId: string, expanded: ReadonlySet<string>, width: TextWidth = estimateWidth,
  path = '', depth = 0): GraphLayout {
  const graph = index.graphs.get(graphId);
  if (graph === undefined) {
    throw new Error(`the document has no graph ${JSON.stringify(graphId)}`);
  }
  const nodes = new Map<string, LayoutNode>();
  const edges: LayoutEdge[] = [];
  const seenEdges = new Set<string>();
  const folds = foldedLines(index);
  const folded = (tensor: TensorRecord) =>
    folds.size > 0 && tensor.producer === null && (tensor.kind === 'variable' || tensor.kind === 'constant');
  const addNode = (key: string, kind: NodeKind, label: string, extra: Partial<LayoutNode>) => {
    const bold = extra.op !== undefined && extra.op.called_graphs.length > 0;
    const sublines = extra.sublines ?? [];
    const wide = Math.max(boxWidth(label, bold, width), ...sublines.map(line => Math.ceil(width(line, false)) + 2 * PAD));
    nodes.set(key, { key, kind, label, sublines, width: wide, height: NODE_HEIGHT + SUBLINE_HEIGHT * sublines.length,
      x: 0, y: 0, layer: 0, inner: [], ...extra });
  };
  const addEdge = (from: string, to: string, tensor: TensorRecord | null) => {
    const id = `${from}->${to}:${tensor?.id ?? ''}`;
    if (!seenEdges.has(id) && nodes.has(from)) {
      seenEdges.add(id);
      edges.push({ from, to, tensor, points: [] });
    }
  };
  const sourceKey = (tensor: TensorRecord) =>
    tensor.producer === null ? nodeKey(path, tensor.id) : nodeKey(path, tensor.producer);

  const addOp = (op: OpRecord) => {
    const key = nodeKey(path, op.id);
    const callable = op.called_graphs.length > 0 && depth < MAX_DEPTH;
    const sites = index.callSitesOfOp(op.id);
    const label = (open: boolean) => opLabel(op, sites, graph => index.label(graph), open);
    if (callable && expanded.has(key)) {
      const inner = op.called_graphs.map((callee, i) => {
        const child = buildLayout(index, callee, expanded, width, `${key}>${callee}`, depth + 1);
        const site = sites[i]?.callee === callee ? sites[i] : sites.find(s => s.callee === callee);
        child.title = site ? frameLabel(site, child.graph.label) : `call: ${child.graph.label}`;
        child.minWidth = Math.ceil(width(child.title, false)) + 2 * PAD;
        return child;
      });
      addNode(key, 'op', label(true), { op, inner });
    } else {
      addNode(key, 'op', label(false), { op, sublines: folds.get(op.id) ?? [] });
    }
  };
  const layering = folds.size > 0 ? shippedLayering(index, graph.id) : undefined;
  if (layering !== undefined) {
    const shipped = new Map<string, [number, number]>();
    const wraps = new Map<string, number>();
    const ops = new Map(graph.ops.map(op => [op.id, op]));
    const outputs = new Set(graph.outputs);
    layering.nodes.forEach((id, i) => {
      const key = nodeKey(path, id);
      shipped.set(key, [layering.layers[i], layering.cols[i]]);
      if (layering.widths?.length === layering.nodes.length) {
        wraps.set(key, layering.widths[i]);
      }
      const op = ops.get(id);
      const tensor = index.tensor(graph.id, id);
      if (op !== undefined) {
        addOp(op);
      } else if (tensor !== undefined && tensor.producer !== null && outputs.has(id)) {
        addNode(key, 'output', `return ${tensor.name}`, { tensor });
      } else if (tensor !== undefined) {
        const kind: NodeKind = tensor.kind === 'variable' || tensor.kind === 'constant' ? tensor.kind : 'input';
        addNode(key, kind, tensor.name, { tensor });
      }
    });
    const whole = nodes.size === layering.nodes.length &&
      [...graph.ops.map(op => op.id), ...graph.inputs].every(id => nodes.has(nodeKey(path, id)));
    if (whole) {  // else the layering is not of this graph (it names what is not there, or leaves out an op or input)
      for (const [from, to, bends] of layering.edges) {
        const tail = layering.nodes[from];
        const head = layering.nodes[to];
        if (!nodes.has(nodeKey(path, tail)) || !nodes.has(nodeKey(path, head))) {
          continue;  // an index out of range: a damaged document, whose other edges are still drawn
        }
        const tensor = nodes.get(nodeKey(path, tail))?.tensor ?? nodes.get(nodeKey(path, head))?.tensor ??
          ops.get(head)?.inputs.map(id => index.tensor(graph.id, id)).find(t => t?.producer === tail) ?? null;
        edges.push({ from: nodeKey(path, tail), to: nodeKey(path, head), tensor, points: [], bends });
      }
      return { graph, title: graph.label, minWidth: 0, path, nodes: [...nodes.values()], edges, width: 0, height: 0, x: 0, y: 0,
        engine: 'layers', wrapped: false, shipped, wraps };
    }
    nodes.clear();
  }
  for (const id of graph.inputs) {
    const tensor = index.tensor(graph.id, id);
    if (tensor) {
      addNode(nodeKey(path, id), 'input', tensor.name, { tensor });
    }
  }
  for (const op of graph.ops) {
    for (const id of op.inputs) {
      const tensor = index.tensor(graph.id, id);
      if (tensor && tensor.producer === null && !folded(tensor) && !nodes.has(nodeKey(path, id))) {
        const kind: NodeKind = tensor.kind === 'variable' || tensor.kind === 'constant' ? tensor.kind : 'input';
        addNode(nodeKey(path, id), kind, tensor.name, { tensor });
      }
    }
  }
  for (const op of graph.ops) {
    const key = nodeKey(path, op.id);
    addOp(op);
    for (const id of op.inputs) {
      const tensor = index.tensor(graph.id, id);
      if (tensor) {
        addEdge(sourceKey(tensor), key, tensor);
      }
    }
    for (const earlier of op.after) {
      addEdge(nodeKey(path, earlier), key, null);
    }
  }
  if (!graph.is_main) {
    for (const id of graph.outputs) {
      const tensor = index.tensor(graph.id, id);
      if (tensor) {
        const key = nodeKey(path, `output:${id}`);
        addNode(key, 'output', `return ${tensor.name}`, { tensor });
        addEdge(sourceKey(tensor), key, tensor);
      }
    }
  }
  return { graph, title: graph.label, minWidth: 0, path, nodes: [...nodes.values()], edges, width: 0, height: 0, x: 0, y: 0,
    engine: 'layers', wrapped: false };
}

const layeringCache = new WeakMap<IrIndex, Map<string, GraphLayering>>();

/** The layering the document ships for `graphId` (its `graph_layers` section), if any. */
export function shippedLayering(index: IrIndex, graphId: string): GraphLayering | undefined {
  let byGraph = layeringCache.get(index);
  if (byGraph === undefined) {
    byGraph = new Map((index.doc.graph_layers?.graphs ?? []).map(entry => [entry.graph, entry]));
    layeringCache.set(index, byGraph);
  }
  return byGraph.get(graphId);
}

const foldedCache = new WeakMap<IrIndex, Map<string, string[]>>();

/**
 * The lines under each op's label in the document's grouped pictures (its folded weights and constants, as
 * `workbench/export/node_content.py` writes them), by op id. Where the document has grouped pictures the
 * graph view folds weights and constants into their ops' boxes likewise; where not, they are nodes.
 */
export function foldedLines(index: IrIndex): Map<string, string[]> {
  let lines = foldedCache.get(index);
  if (lines === undefined) {
    lines = new Map();
    for (const graph of index.doc.grouped?.graphs ?? []) {
      for (const picture of graph.groups) {
        for (const node of picture.nodes) {
          if (node.kind !== 'group') {
            lines.set(node.key, node.lines.slice(1));
          }
        }
      }
    }
    foldedCache.set(index, lines);
  }
  return lines;
}

/** Every node of `layout`, with those inside its expanded calls. */
export function countNodes(layout: GraphLayout): number {
  let count = 0;
  for (const node of layout.nodes) {
    count += 1;
    for (const inner of node.inner) {
      count += countNodes(inner);
    }
  }
  return count;
}

/**
 * Places `layout` in plain layers, its expanded calls first: each call's frames side by side below its
 * label. Edges run straight from the bottom of one node to the top of the next, over whatever lies between.
 */
export function placeInLayers(layout: GraphLayout): void {
  for (const node of layout.nodes) {
    if (node.inner.length === 0) {
      continue;
    }
    let x = PAD;
    for (const child of node.inner) {
      placeInLayers(child);
      child.x = x;
      child.y = HEADER;
      x += child.width + GAP_X;
    }
    node.width = Math.max(node.width, x - GAP_X + PAD);
    node.height = HEADER + maxOf(node.inner, child => child.height, 0) + PAD;
  }
  place(layout);
  const byKey = new Map(layout.nodes.map(n => [n.key, n]));
  for (const edge of layout.edges) {
    const from = byKey.get(edge.from)!;
    const to = byKey.get(edge.to)!;
    edge.points = [{ x: from.x + from.width / 2, y: from.y + from.height }, { x: to.x + to.width / 2, y: to.y }];
  }
  layout.engine = 'layers';
}

/** Assigns layers (longest path from a source), orders each layer, then sets coordinates. */
function place(layout: GraphLayout): void {
  const incoming = new Map<string, string[]>(layout.nodes.map(n => [n.key, []]));
  for (const edge of layout.edges) {
    incoming.get(edge.to)?.push(edge.from);
  }
  const layerOf = longestPathLayers(layout.nodes, layout.edges);
  const layers: LayoutNode[][] = [];
  for (const node of layout.nodes) {
    node.layer = layerOf.get(node.key)!;
    (layers[node.layer] ??= []).push(node);
  }
  const position = new Map<string, number>();
  for (const row of layers) {
    if (!row) {
      continue;
    }
    const centre = (node: LayoutNode) => {
      const preds = (incoming.get(node.key) ?? []).filter(k => position.has(k));
      return preds.length ? preds.reduce((sum, k) => sum + position.get(k)!, 0) / preds.length : Infinity;
    };
    const keyed = row.map((node, i) => ({ node, i, c: centre(node) }));
    keyed.sort((a, b) => (a.c === b.c ? a.i - b.i : a.c === Infinity ? 1 : b.c === Infinity ? -1 : a.c - b.c));
    keyed.forEach((k, i) => {
      row[i] = k.node;
      position.set(k.node.key, i);
    });
  }
  const rows = layers.filter(row => row && row.length);
  const rowWidth = (row: LayoutNode[]) => row.reduce((sum, n) => sum + n.width, 0) + GAP_X * (row.length - 1);
  const width = Math.max(maxOf(rows, rowWidth, 0) + 2 * PAD, layout.minWidth);
  let y = PAD;
  for (const row of rows) {
    let x = (width - rowWidth(row)) / 2;
    const height = maxOf(row, n => n.height, 0);
    for (const node of row) {
      node.x = x;
      node.y = y;
      x += node.width + GAP_X;
    }
    y += height + GAP_Y;
  }
  layout.width = Math.max(width, 2 * PAD + MIN_NODE_WIDTH);
  layout.height = rows.length ? y - GAP_Y + PAD : 2 * PAD + NODE_HEIGHT;
}

/**
 * Each node's layer: one more than its deepest predecessor (sources are layer 0), without recursion, so
 * a chain of any length is fine. Nodes on a cycle (only a broken IR has one) are taken in order, as if
 * the edge closing the cycle were not there.
 */
export function longestPathLayers(nodes: LayoutNode[], edges: LayoutEdge[]): Map<string, number> {
  const waiting = new Map<string, number>(nodes.map(n => [n.key, 0]));
  const outgoing = new Map<string, string[]>(nodes.map(n => [n.key, []]));
  for (const edge of edges) {
    if (waiting.has(edge.to) && outgoing.has(edge.from)) {
      waiting.set(edge.to, waiting.get(edge.to)! + 1);
      outgoing.get(edge.from)!.push(edge.to);
    }
  }
  const layer = new Map<string, number>(nodes.map(n => [n.key, 0]));
  const order: string[] = [];
  const queued = new Set<string>();
  const placed = new Set<string>();
  const enqueue = (key: string) => {
    if (!queued.has(key)) {
      queued.add(key);
      order.push(key);
    }
  };
  for (const node of nodes) {
    if (waiting.get(node.key) === 0) {
      enqueue(node.key);
    }
  }
  let unblock = 0;
  for (let next = 0; next < nodes.length; next++) {
    if (next === order.length) {
      while (queued.has(nodes[unblock].key)) {
        unblock += 1;
      }
      enqueue(nodes[unblock].key);
    }
    const key = order[next];
    placed.add(key);
    for (const to of outgoing.get(key)!) {
      if (!placed.has(to)) {
        layer.set(to, Math.max(layer.get(to)!, layer.get(key)! + 1));
      }
      waiting.set(to, waiting.get(to)! - 1);
      if (waiting.get(to) === 0) {
        enqueue(to);
      }
    }
  }
  return layer;
}
