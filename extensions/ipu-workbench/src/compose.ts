/**
 * A group's picture in pixels with any of its child groups expanded in place, by the steps of the Python
 * side's `workbench/export/compose.py` (a test compares the two): an expanded group is a frame around its
 * own picture, taking the room that picture needs in the layers and columns its collapsed box had; a layer
 * wider than the room wraps into rows, and a picture still too wide draws its columns closer; a tall
 * picture folds into bands of layers side by side; edges are vertical and horizontal runs that move sideways
 * only in the gaps between layers (and the gutters between bands), so that none passes through a box; the
 * ports on a frame's borders join the edges outside it to the ops inside it, coming in right of its title.
 * Only arithmetic on the shipped layers and columns: no layout search runs in the page.
 */
import type { GroupPicture, PictureBox } from './generated/document.js';
import { wrapRows } from './wrapping.js';

export const CHAR_WIDTH = 7;
const LINE_HEIGHT = 15;
const PAD_X = 8;
const PAD_Y = 6;
const GAP_X = 24;
const GAP_Y = 40;
const MARGIN = 12;
const MAX_COLUMN = 240;
export const INSET = 10;
export const HEADER = LINE_HEIGHT + 2 * PAD_Y;
/** Pixels a tall picture folds to where its output's width is not known: a notebook figure's plot area. */
export const FOLD_WIDTH = 920;
const FOLD_ABOVE = 900;
const GUTTER = 2 * GAP_X;
/** Pixels between the runs of edges bent at one column of a layer (a bus of edges). */
const BUS_GAP = 8;

export interface SceneBox extends Omit<PictureBox, 'layer' | 'col'> {
  /** the centre, in pixels from the picture's top left */
  x: number;
  /** the top */
  y: number;
  expanded: boolean;
}

export interface SceneEdge {
  points: number[][];
  label: string;
  arrow: boolean;
  tail: string | null;
  head: string | null;
}

export interface Scene {
  width: number;
  height: number;
  boxes: SceneBox[];
  edges: SceneEdge[];
  inX: number;
  outX: number;
}

/** The title of an expanded group's frame. */
export function frameTitle(picture: GroupPicture): string {
  return `▾ ${picture.label} · ${picture.ops} op${picture.ops !== 1 ? 's' : ''}`;
}

/** A gap between layers, named by its band and the layer under it: where an edge moves sideways. */
type Gap = [number, number];
type Point = [number, number | Gap];

/**
 * The picture of group `groupId` with the groups in `expanded` drawn in place; `pictureOf(id)` gives a
 * picture of the `grouped` section. A tall picture folds to at most `room` pixels wide; edges come into it
 * right of `titleEnd` (the end of the title of the frame it is drawn in).
 */
export function compose(pictureOf: (id: string) => GroupPicture, groupId: string, expanded: ReadonlySet<string>,
  room: number = FOLD_WIDTH, titleEnd: number = 0): Scene {
  let picture = pictureOf(groupId);
  let { nodes, ports, edges } = picture;
  const inner = new Map<number, Scene>();
  const titles = new Map<number, string>();
  const sizes: Array<[number, number]> = [];
  nodes.forEach((node, index) => {
    if (node.kind === 'group' && expanded.has(node.key)) {
      const title = frameTitle(pictureOf(node.key));
      titles.set(index, title);
      const clear = PAD_X + title.length * CHAR_WIDTH - INSET + GAP_X / 2;
      const scene = compose(pictureOf, node.key, expanded, room - 2 * MARGIN - 2 * INSET, clear);
      inner.set(index, scene);
      sizes.push([Math.max(scene.width + 2 * INSET, title.length * CHAR_WIDTH + 2 * PAD_X),
        scene.height + HEADER + INSET]);
    } else {
      sizes.push([node.w, node.h]);
    }
  });
  picture = wrapped(picture, sizes, room);
  ({ nodes, ports, edges } = picture);
  const widths = nodes.map(node => node.w).sort((a, b) => a - b);
  let column = Math.min(widths.length ? widths[Math.floor(widths.length / 2)] : 0, MAX_COLUMN) + GAP_X;
  const depth = picture.depth;
  const tallest: number[] = new Array(depth).fill(0);
  nodes.forEach((node, index) => {
    tallest[node.layer] = Math.max(tallest[node.layer], sizes[index][1]);
  });
  let [centres, rights] = placeRows(picture, sizes, column, new Set());
  [column, centres, rights] = closedUp(picture, sizes, column, centres, rights, room);
  let band: number[] = new Array(depth).fill(0);
  const tops: number[] = [];
  let bottom = MARGIN;
  for (const height of tallest) {
    tops.push(bottom);
    bottom += height + GAP_Y;
  }
  bottom -= depth ? GAP_Y : 0;
  if (bottom + MARGIN > FOLD_ABOVE && bottom + MARGIN > Math.max(0, ...rights) + MARGIN && depth >= 4) {
    band = fold(tallest, rights, room);
  }
  const bands = depth ? band[depth - 1] + 1 : 1;
  const bandOf = (end: number, side: string): number =>
    end >= 0 ? band[nodes[end].layer] : band[ports.find(port => port.side === side)!.layer];
  const crossing = new Set<number>();
  edges.forEach((edge, number) => {
    if (bandOf(edge.from, 'in') !== bandOf(edge.to, 'out')) {
      crossing.add(number);
    }
  });
  if (crossing.size) {
    [centres, rights] = placeRows(picture, sizes, column, crossing);
  }
  const bandWidth: number[] = new Array(bands).fill(0);
  for (let layer = 0; layer < depth; layer++) {
    bandWidth[band[layer]] = Math.max(bandWidth[band[layer]], rights[layer] - MARGIN);
  }
  const shift: number[] = new Array(bands).fill(0);
  for (let number = 1; number < bands; number++) {
    shift[number] = shift[number - 1] + bandWidth[number - 1] + GUTTER;
  }
  const floor: number[] = new Array(bands).fill(0);
  let right: number;
  if (bands > 1) {
    const at: number[] = new Array(bands).fill(MARGIN + GAP_Y);
    for (let layer = 0; layer < depth; layer++) {
      tops[layer] = at[band[layer]];
      at[band[layer]] += tallest[layer] + GAP_Y;
      floor[band[layer]] = tops[layer] + tallest[layer];
    }
    bottom = Math.max(...floor) + GAP_Y;
    right = shift[bands - 1] + MARGIN + bandWidth[bands - 1];
  } else {
    right = Math.max(0, ...rights);
  }
  const xOf = (ref: string): number => {
    const [centre, layer] = centres.get(ref)!;
    return centre + shift[band[layer]];
  };
  const portX = new Map<string, number>();
  const portLayer = new Map<string, number>();
  ports.forEach((port, index) => {
    portX.set(port.side, xOf(`port:${index}`));
    portLayer.set(port.side, port.layer);
  });
  let entry = portX.get('in') ?? 0;
  if (portX.has('in') && titleEnd > entry) {
    entry = titleEnd;
    right = Math.max(right, entry + GAP_X / 2);
  }
  const width = right + MARGIN;
  const scene: Scene = { width, height: bottom + MARGIN, boxes: [], edges: [], inX: width / 2, outX: width / 2 };
  const placed: SceneBox[] = nodes.map((node, index) => {
    const [w, h] = sizes[index];
    const { layer, col, ...rest } = node;
    void col;
    const box: SceneBox = { ...rest, x: xOf(`node:${index}`), y: tops[layer] + (tallest[layer] - h) / 2, w, h,
      expanded: inner.has(index) };
    if (inner.has(index)) {
      box.lines = [titles.get(index)!];
    }
    return box;
  });
  scene.inX = portX.has('in') ? entry : scene.inX;
  scene.outX = portX.get('out') ?? scene.outX;
  const tailPoint = (end: number): Point => {
    if (end < 0) {
      return [portX.get('in')!, tops[portLayer.get('in')!]];
    }
    const box = placed[end];
    const x = inner.has(end) ? box.x - box.w / 2 + INSET + inner.get(end)!.outX : box.x;
    return [x, box.y + box.h];
  };
  const headPoint = (end: number): Point => {
    if (end < 0) {
      const layer = portLayer.get('out')!;
      return [portX.get('out')!, tops[layer] + tallest[layer]];
    }
    const box = placed[end];
    const x = inner.has(end) ? box.x - box.w / 2 + INSET + inner.get(end)!.inX : box.x;
    return [x, box.y];
  };
  const gutter = (leftBand: number): number => shift[leftBand] + MARGIN + bandWidth[leftBand] + GUTTER / 2;
  const routes: Point[][] = edges.map((edge, number) => {
    const tail = edge.from;
    const head = edge.to;
    const start = tailPoint(tail);
    let end = headPoint(head);
    const tailLayer = tail >= 0 ? nodes[tail].layer : portLayer.get('in')!;
    const headLayer = head >= 0 ? nodes[head].layer : portLayer.get('out')!;
    let points: Point[] = [start];
    if (tail < 0 && entry !== start[0]) {
      points = [[entry, 0], [entry, MARGIN / 2], [start[0], MARGIN / 2], start];
    }
    if (tail >= 0 && (start[1] as number) < tops[tailLayer] + tallest[tailLayer]) {
      points.push([start[0], tops[tailLayer] + tallest[tailLayer]]);
    }
    const tailBand = band[tailLayer];
    const headBand = band[headLayer];
    if (tailBand !== headBand) {
      const leaving: Gap = [tailBand, tailLayer + 1];
      const arriving: Gap = [headBand, headLayer];
      const outX = gutter(headBand > tailBand ? tailBand : tailBand - 1);
      const inX = gutter(headBand > tailBand ? headBand - 1 : headBand);
      points.push([start[0], leaving], [outX, leaving]);
      if (inX !== outX) {
        points.push([outX, MARGIN + GAP_Y / 4], [inX, MARGIN + GAP_Y / 4]);
      }
      points.push([inX, arriving], [end[0], arriving]);
    } else if (headLayer <= tailLayer) {
      edge.bends.forEach(([, layer], bend) => {
        const x = xOf(`bend:${number}:${bend}`);
        points.push([x, tops[layer]], [x, tops[layer] + tallest[layer]]);
      });
    } else {
      let x = points[points.length - 1][0];
      edge.bends.forEach(([, layer], bend) => {
        const bendX = xOf(`bend:${number}:${bend}`);
        if (bendX !== x) {
          points.push([x, [tailBand, layer]], [bendX, [tailBand, layer]]);
        }
        points.push([bendX, tops[layer]], [bendX, tops[layer] + tallest[layer]]);
        x = bendX;
      });
      if (head >= 0 && !inner.has(head) && Math.abs(end[0] - x) <= placed[head].w / 2 - PAD_X) {
        end = [x, end[1]];
      }
      if (end[0] !== x) {
        points.push([x, [tailBand, headLayer]], [end[0], [tailBand, headLayer]]);
      }
    }
    if (head >= 0 && (end[1] as number) > tops[headLayer]) {
      points.push([end[0], tops[headLayer]]);
    }
    points.push(end);
    return points;
  });
  const tracks = new Map<string, number[]>();
  routes.forEach((points, number) => {
    for (const [, y] of points) {
      if (typeof y !== 'number') {
        const users = tracks.get(y.join(':')) ?? [];
        tracks.set(y.join(':'), users);
        if (!users.includes(number)) {
          users.push(number);
        }
      }
    }
  });
  const trackY = (number: number, [gapBand, layer]: Gap): number => {
    let above: number;
    let below: number;
    if (layer < depth && band[layer] === gapBand) {
      below = tops[layer];
      above = below - GAP_Y;
    } else {
      above = bands > 1 ? floor[gapBand] : tops[layer - 1] + tallest[layer - 1];
      below = above + GAP_Y;
    }
    const users = tracks.get(`${gapBand}:${layer}`)!;
    return above + (below - above) * (users.indexOf(number) + 1) / (users.length + 1);
  };
  edges.forEach((edge, number) => {
    const tail = edge.from;
    const head = edge.to;
    const points = routes[number].map(([x, y]) => [x, typeof y === 'number' ? y : trackY(number, y)]);
    scene.edges.push({ points, label: edge.label, arrow: head >= 0, tail: tail >= 0 ? placed[tail].key : null,
      head: head >= 0 ? placed[head].key : null });
  });
  scene.boxes.push(...placed);
  for (const [index, part] of inner) {
    const box = placed[index];
    const left = box.x - box.w / 2 + INSET;
    const top = box.y + HEADER;
    for (const drawn of part.boxes) {
      scene.boxes.push({ ...drawn, x: drawn.x + left, y: drawn.y + top });
    }
    for (const drawn of part.edges) {
      const points = drawn.points.map(([x, y]) => [x + left, y + top]);
      if (drawn.tail === null) {
        points[0][1] = box.y;
      }
      if (drawn.head === null) {
        points[points.length - 1][1] = box.y + box.h;
      }
      scene.edges.push({ ...drawn, points, tail: drawn.tail ?? box.key, head: drawn.head ?? box.key });
    }
  }
  return scene;
}

/**
 * The centre (and layer) of every box, port and bend in its layer, by `kind:index` (bends `bend:edge:bend`),
 * the bends of the edges `skipped` left out; and how far right each layer reaches.
 */
function placeRows(picture: GroupPicture, sizes: Array<[number, number]>, column: number,
  skipped: ReadonlySet<number>): [Map<string, [number, number]>, number[]] {
  type Ref = ['node', number] | ['port', number] | ['bend', number, number];
  const rows: Array<Array<[number, number, Ref]>> = Array.from({ length: picture.depth }, () => []);
  picture.nodes.forEach((node, index) => rows[node.layer].push([node.col, 0, ['node', index]]));
  picture.ports.forEach((port, index) => rows[port.layer].push([port.col, 0, ['port', index]]));
  picture.edges.forEach((edge, number) => {
    if (!skipped.has(number)) {
      edge.bends.forEach(([col, layer], bend) => rows[layer].push([col, 1, ['bend', number, bend]]));
    }
  });
  const centres = new Map<string, [number, number]>();
  const rights: number[] = new Array(picture.depth).fill(0);
  rows.forEach((row, layer) => {
    row.sort((a, b) => (a[0] - b[0]) || (a[1] - b[1]));
    let reach = MARGIN;
    let bus: number | null = null;  // the column of the bend just placed: the next bend of that column runs beside it
    for (const [col, isBend, ref] of row) {
      const ideal = (col - picture.left) * column + column / 2 + MARGIN;
      const half = isBend ? GAP_X / 2 : ref[0] === 'node' ? sizes[ref[1]][0] / 2 : 0;
      let centre = Math.max(ideal, reach + half);
      if (isBend && col === bus) {
        centre = Math.max(ideal, reach - half + BUS_GAP);
      }
      bus = isBend ? col : null;
      reach = centre + half + (isBend ? 0 : GAP_X / 2);
      rights[layer] = Math.max(rights[layer], centre + half);
      centres.set(ref.join(':'), [centre, layer]);
    }
  });
  return [centres, rights];
}

/**
 * `picture` with each layer whose boxes (`sizes`, frames at their size) are wider side by side than `room`
 * wrapped into rows of consecutive boxes, one under another, as lines of text wrap: an edge from a box runs
 * down through the rows under it, and one into a box down through the rows above it, each at its box's
 * column, and one across the layer through every row. Pictures whose groups feed each other both ways stay
 * as they are.
 */
function wrapped(picture: GroupPicture, sizes: Array<[number, number]>, room: number): GroupPicture {
  const { nodes, edges, depth } = picture;
  if (edges.some(edge => edge.from >= 0 && edge.to >= 0 && nodes[edge.to].layer <= nodes[edge.from].layer)) {
    return picture;
  }
  const rows: number[][] = Array.from({ length: depth }, () => []);
  nodes.forEach((node, index) => rows[node.layer].push(index));
  const rowOf: number[] = new Array(nodes.length).fill(0);
  const count: number[] = new Array(depth).fill(1);
  rows.forEach((members, layer) => {
    members.sort((a, b) => nodes[a].col - nodes[b].col);
    const wrappedRows = wrapRows(members.map(index => sizes[index][0]), room - 2 * MARGIN, GAP_X);
    members.forEach((index, i) => (rowOf[index] = wrappedRows[i]));
    count[layer] = wrappedRows.length ? wrappedRows[wrappedRows.length - 1] + 1 : 1;
  });
  if (Math.max(1, ...count) === 1) {
    return picture;
  }
  const first: number[] = new Array(depth).fill(0);
  for (let layer = 1; layer < depth; layer++) {
    first[layer] = first[layer - 1] + count[layer - 1];
  }
  const end = (index: number, side: string): [number, number, number] => {
    if (index >= 0) {
      return [nodes[index].layer, rowOf[index], nodes[index].col];
    }
    const port = picture.ports.find(each => each.side === side)!;
    return [port.layer, side === 'in' ? 0 : count[port.layer] - 1, port.col];
  };
  const newEdges = edges.map(edge => {
    const [tailLayer, tailRow, tailCol] = end(edge.from, 'in');
    const [headLayer, headRow, headCol] = end(edge.to, 'out');
    const bends: number[][] = [];
    for (let row = tailRow + 1; row < count[tailLayer]; row++) {
      bends.push([tailCol, first[tailLayer] + row]);
    }
    for (const [col, layer] of edge.bends) {
      for (let row = 0; row < count[layer]; row++) {
        bends.push([col, first[layer] + row]);
      }
    }
    for (let row = 0; row < headRow; row++) {
      bends.push([headCol, first[headLayer] + row]);
    }
    return { ...edge, bends };
  });
  return { ...picture, depth: count.reduce((sum, each) => sum + each, 0), edges: newEdges,
    nodes: nodes.map((node, index) => ({ ...node, layer: first[node.layer] + rowOf[index] })),
    ports: picture.ports.map(port => ({ ...port,
      layer: first[port.layer] + (port.side === 'in' ? 0 : count[port.layer] - 1) })) };
}

/**
 * Where the picture is wider than `room`, its columns drawn closer, by the largest factor (in twentieths)
 * that brings it within, or the smallest: a layer's boxes, ports and bends keep their order and stay apart,
 * only the slack between them goes. Gives the column and the places.
 */
function closedUp(picture: GroupPicture, sizes: Array<[number, number]>, column: number,
  centres: Map<string, [number, number]>, rights: number[], room: number): [number, Map<string, [number, number]>, number[]] {
  let chosen = column;
  for (let twentieths = 19; twentieths > 0; twentieths--) {
    if (Math.max(0, ...rights) + MARGIN <= room) {
      break;
    }
    chosen = column * twentieths / 20;
    [centres, rights] = placeRows(picture, sizes, chosen, new Set());
  }
  return [chosen, centres, rights];
}

/**
 * The band of each layer: the layers cut into bands of about equal height, as many as make the picture
 * about as wide as tall within `room` pixels (one band where two do not fit).
 */
function fold(tallest: number[], rights: number[], room: number): number[] {
  const total = tallest.reduce((sum, height) => sum + height + GAP_Y, 0);
  let chosen: number[] = new Array(tallest.length).fill(0);
  for (let count = 2; count <= Math.floor(tallest.length / 2); count++) {
    const band: number[] = [];
    let done = 0;
    let number = 0;
    for (const height of tallest) {
      if (number < count - 1 && done > 0 && done + (height + GAP_Y) / 2 > total * (number + 1) / count) {
        number += 1;
      }
      band.push(number);
      done += height + GAP_Y;
    }
    const widths: number[] = new Array(number + 1).fill(0);
    const heights: number[] = new Array(number + 1).fill(0);
    tallest.forEach((height, layer) => {
      widths[band[layer]] = Math.max(widths[band[layer]], rights[layer] - MARGIN);
      heights[band[layer]] += height + GAP_Y;
    });
    const width = widths.reduce((sum, each) => sum + each, 0) + GUTTER * number + 2 * MARGIN;
    if (width > room) {
      break;
    }
    chosen = band;
    if (Math.max(...heights) <= width) {
      break;
    }
  }
  return chosen;
}

/** The groups from `top`'s child down to `groupId` (expanding them all shows it); null where it is not below `top`. */
export function expandedChain(pictureOf: (id: string) => GroupPicture | undefined, top: string, groupId: string): string[] | null {
  const chain: string[] = [];
  let at: string | null = groupId;
  while (at !== null && at !== top) {
    chain.push(at);
    at = pictureOf(at)?.parent ?? null;
  }
  return at === top ? chain.reverse() : null;
}
