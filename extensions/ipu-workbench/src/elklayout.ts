/**
 * Placement of a built layout by ELK's layered algorithm, for a document that ships no layering of the graph
 * (one saved before the `graph_layers` section; else `shippedlayout.ts` places it): nodes in layers top to
 * bottom, edges routed orthogonally between them so that they bend around nodes instead of crossing them. An
 * expanded call is an ELK compound node holding one compound per called graph, laid out inside it first. A
 * graph too big for ELK to lay out in reasonable time, or a layout that fails, is placed in plain layers instead.
 */
import { ElkExtendedEdge, ElkNode, LayoutOptions } from 'elkjs/lib/elk-api.js';

import { elkLayout } from './elk.js';
import { countNodes, GAP_X, GraphLayout, HEADER, LayoutEdge, PAD, placeInLayers, Point } from './layout.js';
import { bandRows } from './wrapping.js';

/**
 * Above this many nodes the plain layering is used, which takes milliseconds. ELK's time grows faster
 * than the node count: in Chromium, from the graph picked to the graph drawn, about 0.3 s for 560 nodes
 * and 2 to 2.7 s for the 3,750 nodes of a 2,000-op backward graph (the first layout of a page also
 * starts the worker).
 */
export const ELK_MAX_NODES = 4000;
/** A layout that takes longer than this is given up and the plain layering drawn instead. */
export const ELK_SECONDS = 20;

const GRAPH_OPTIONS: LayoutOptions = {
  'elk.algorithm': 'layered',
  'elk.direction': 'DOWN',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.padding': `[top=${PAD},left=${PAD},bottom=${PAD},right=${PAD}]`,
  'elk.spacing.nodeNode': String(GAP_X),
  'elk.layered.spacing.nodeNodeBetweenLayers': '28',
  'elk.spacing.edgeNode': '12',
  'elk.layered.spacing.edgeNodeBetweenLayers': '12',
  'elk.spacing.edgeEdge': '8',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '8'
};

/**
 * ELK's choices by the size of the drawing. Network-simplex placement straightens chains of ops (a
 * narrower drawing with fewer bends) but its time grows fast, so bigger drawings take ELK's default
 * placement; the biggest also merge the edges leaving one node, which halves ELK's time on them.
 */
function graphOptions(nodes: number): LayoutOptions {
  if (nodes <= 300) {
    return { ...GRAPH_OPTIONS, 'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX' };
  }
  return nodes <= 1500 ? GRAPH_OPTIONS : { ...GRAPH_OPTIONS, 'elk.layered.mergeEdges': 'true' };
}

/**
 * Times a layout still wider than its room after its wide layers were wrapped is laid out again with its
 * rows packed tighter (the edges that pass a wrapped layer take room beside its boxes).
 */
const WRAP_TRIES = 3;
/**
 * Above this many nodes a drawing wider than its output is not laid out again with its layers wrapped: each
 * try is another ELK layout of seconds (such a drawing scrolls sideways, or is fitted to the width on asking).
 */
export const WRAP_MAX_NODES = 1500;
/**
 * From this many nodes a drawing to be wrapped is shown as ELK first placed it while its wrapped layouts
 * are made (a second or more), so that a picture comes first; below, wrapping is quick and shown at once.
 */
export const SHOW_BEFORE_WRAP_NODES = 200;

/** An expanded call: its frames in one row, in the order of the call's graphs, below its label. */
const CALL_OPTIONS: LayoutOptions = {
  'elk.algorithm': 'layered',
  'elk.direction': 'DOWN',
  'elk.padding': `[top=${HEADER},left=${PAD},bottom=${PAD},right=${PAD}]`,
  'elk.spacing.nodeNode': String(GAP_X),
  'elk.separateConnectedComponents': 'false',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES'
};

/** Whether ELK lays `layout` out in reasonable time (else it is for `placeInLayers`). */
export function fitsElk(layout: GraphLayout): boolean {
  return countNodes(layout) <= ELK_MAX_NODES;
}

/**
 * Places `layout` with ELK, or in plain layers if ELK fails or takes longer than `seconds`; resolves to
 * whether ELK placed it. Where ELK's drawing is wider than `room` pixels (0: any width will do) and has at
 * most `WRAP_MAX_NODES` nodes, its wide layers are wrapped into rows (`wrapLayers`); from
 * `SHOW_BEFORE_WRAP_NODES` nodes `showUnwrapped` is first handed a copy of the drawing as ELK placed it.
 */
export async function arrange(layout: GraphLayout, seconds = ELK_SECONDS, room = 0,
  showUnwrapped?: (placed: GraphLayout) => void): Promise<boolean> {
  try {
    await placeWithElk(layout, seconds);
    const nodes = countNodes(layout);
    if (room > 0 && layout.width > room && nodes <= WRAP_MAX_NODES) {
      if (showUnwrapped !== undefined && nodes >= SHOW_BEFORE_WRAP_NODES) {
        showUnwrapped(placementCopy(layout));
      }
      await wrapLayers(layout, room, seconds);
    }
    return true;
  } catch (error) {
    console.warn('ipu-workbench: ELK could not lay out the graph; drawing it in plain layers', error);
    placeInLayers(layout);
    return false;
  }
}

/**
 * Places `layout` (and everything expanded in it) with ELK: positions, sizes and edge routes. Given
 * `rows` (a number for every node), each node goes in a layer of its own row, rows in their order.
 */
export async function placeWithElk(layout: GraphLayout, seconds = ELK_SECONDS, rows?: ReadonlyMap<string, number>): Promise<void> {
  const edges = new Map<string, LayoutEdge>();
  const options = graphOptions(countNodes(layout));
  const wrapped: LayoutOptions = { ...options, 'elk.partitioning.activate': 'true', 'elk.layered.mergeEdges': 'true',
    'elk.layered.nodePlacement.strategy': 'SIMPLE', 'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES' };
  const result = await elkLayout(toElk(layout, 'root', rows ? wrapped : options,
    edges, rows), seconds);
  fromElk(layout, result, edges);
}

/**
 * Lays `layout`, drawn by ELK wider than `room`, out again with its wide layers wrapped into rows as lines of
 * text wrap, by the rule the notebook's Graph tab wraps by too (`bandRows`): ELK's layers are kept, each
 * row of a layer becomes a layer of its own (an ELK partition) holding consecutive nodes in the graph's order,
 * and the edges from one node down past the rows are merged into one run. Where they leave the drawing still
 * too wide, its rows are packed tighter, up to `WRAP_TRIES` times while that makes it narrower.
 */
async function wrapLayers(layout: GraphLayout, room: number, seconds: number): Promise<void> {
  const layers = new Map<string, number>();
  readLayers(layout, layers);
  let budget = room;
  let before = layout.width;
  for (let tries = 0; tries < WRAP_TRIES; tries++) {
    const rows = new Map<string, number>();
    packRows(layout, layers, budget, rows);
    await placeWithElk(layout, seconds, rows);
    layout.wrapped = true;
    if (layout.width <= room || layout.width >= before) {  // it fits, or packing tighter no longer helps
      return;
    }
    before = layout.width;
    budget = (budget * room) / layout.width - GAP_X;
  }
}

/**
 * A copy of `layout`'s placement (positions, sizes, routes) that later layouts of `layout` leave alone; the
 * records of ops, tensors and graphs are shared, so the copy's nodes still name the same ops.
 */
function placementCopy(layout: GraphLayout): GraphLayout {
  return {
    ...layout,
    nodes: layout.nodes.map(node => ({ ...node, inner: node.inner.map(placementCopy) })),
    edges: layout.edges.map(edge => ({ ...edge, points: edge.points.map(point => ({ ...point })) }))
  };
}

/** The layer of every node of `layout` (and of the layouts inside it), as placed. */
function readLayers(layout: GraphLayout, layers: Map<string, number>): void {
  const byTop = [...layout.nodes].sort((a, b) => a.y - b.y);
  let layer = -1;
  let bottom = -Infinity;
  for (const node of byTop) {
    if (node.y >= bottom) {  // below every node of the layer before: ELK's layers do not overlap
      layer += 1;
    }
    bottom = Math.max(bottom, node.y + node.height);
    layers.set(node.key, layer);
    node.inner.forEach(inner => readLayers(inner, layers));
  }
}

/**
 * The row of every node of `layout` (and of the layouts inside it) with its layers, each in the graph's order,
 * wrapped to `room` pixels by `bandRows`.
 */
function packRows(layout: GraphLayout, layers: ReadonlyMap<string, number>, room: number, rows: Map<string, number>): void {
  const byLayer: string[][] = [];
  const widths = new Map<string, number>();
  for (const node of layout.nodes) {
    (byLayer[layers.get(node.key)!] ??= []).push(node.key);
    widths.set(node.key, node.width);
    node.inner.forEach(inner => packRows(inner, layers, room - 4 * PAD, rows));
  }
  const predecessors = new Map<string, string[]>();
  for (const edge of layout.edges) {
    (predecessors.get(edge.to) ?? predecessors.set(edge.to, []).get(edge.to)!).push(edge.from);
  }
  const packed = bandRows(byLayer.filter(keys => keys !== undefined), widths, predecessors, room - 2 * PAD, GAP_X);
  packed.rows.forEach((row, key) => rows.set(key, row));
}

function minimumSize(width: number, height: number): LayoutOptions {
  return { 'elk.nodeSize.constraints': 'MINIMUM_SIZE', 'elk.nodeSize.minimum': `(${width},${height})` };
}

function toElk(layout: GraphLayout, id: string, options: LayoutOptions, edges: Map<string, LayoutEdge>,
  rows?: ReadonlyMap<string, number>): ElkNode {
  const row = (key: string): LayoutOptions => rows ? { 'elk.partitioning.partition': String(rows.get(key) ?? 0) } : {};
  return {
    id,
    layoutOptions: { ...options, ...minimumSize(layout.minWidth, 0) },
    children: layout.nodes.map(node => node.inner.length === 0 ? { id: node.key, width: node.width, height: node.height,
      layoutOptions: row(node.key) } : {
      id: node.key,
      layoutOptions: { ...CALL_OPTIONS, ...minimumSize(node.width, node.height), ...row(node.key) },
      children: node.inner.map(inner => toElk(inner, `frame:${inner.path}`, options, edges, rows))
    }),
    edges: layout.edges.map(edge => {
      const edgeId = `edge:${edges.size}`;
      edges.set(edgeId, edge);
      return { id: edgeId, sources: [edge.from], targets: [edge.to] };
    })
  };
}

/** Copies ELK's positions, sizes and routes into `layout`; `frame` is ELK's node for it. */
function fromElk(layout: GraphLayout, frame: ElkNode, edges: Map<string, LayoutEdge>): void {
  layout.width = frame.width ?? 0;
  layout.height = frame.height ?? 0;
  layout.engine = 'elk';
  const placed = new Map((frame.children ?? []).map(child => [child.id, child]));
  for (const node of layout.nodes) {
    const child = placed.get(node.key);
    if (child === undefined) {
      throw new Error(`ELK returned no node ${node.key}`);
    }
    node.x = child.x ?? 0;
    node.y = child.y ?? 0;
    node.width = child.width ?? node.width;
    node.height = child.height ?? node.height;
    node.inner.forEach((inner, i) => {
      const box = child.children?.[i];
      if (box === undefined || box.id !== `frame:${inner.path}`) {
        throw new Error(`ELK returned no frame for ${inner.path}`);
      }
      fromElk(inner, box, edges);
      inner.x = box.x ?? 0;
      inner.y = box.y ?? 0;
    });
  }
  for (const routed of frame.edges ?? []) {
    const edge = edges.get(routed.id);
    if (edge !== undefined) {
      edge.points = route(routed);
    }
  }
}

function route(edge: ElkExtendedEdge): Point[] {
  const section = edge.sections?.[0];
  if (section === undefined) {
    throw new Error(`ELK returned no route for ${edge.id}`);
  }
  return [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map(p => ({ x: p.x, y: p.y }));
}
