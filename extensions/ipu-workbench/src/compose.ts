/**
 * A group's picture in pixels with any of its child groups expanded in place, by the steps of the Python
 * side's `workbench/export/compose.py` (a test compares the two): an expanded group is a frame around its
 * own picture, taking the room that picture needs in the layers and columns its collapsed box had; edges
 * cross a layer as a vertical run, so that none passes through a box; the ports on a frame's borders join
 * the edges outside it to the ops inside it. Only arithmetic on the shipped layers and columns: no
 * layout search runs in the page.
 */
import type { GroupPicture, PictureBox } from './generated/document.js';

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

type Ref = ['node', number] | ['port', number] | ['bend', number, number];

/**
 * The picture of group `groupId` with the groups in `expanded` drawn in place; `pictureOf(id)` gives a
 * picture of the `grouped` section.
 */
export function compose(pictureOf: (id: string) => GroupPicture, groupId: string, expanded: ReadonlySet<string>): Scene {
  const picture = pictureOf(groupId);
  const { nodes, ports, edges } = picture;
  const inner = new Map<number, Scene>();
  const titles = new Map<number, string>();
  const sizes: Array<[number, number]> = [];
  nodes.forEach((node, index) => {
    if (node.kind === 'group' && expanded.has(node.key)) {
      const scene = compose(pictureOf, node.key, expanded);
      inner.set(index, scene);
      titles.set(index, frameTitle(pictureOf(node.key)));
      sizes.push([Math.max(scene.width + 2 * INSET, titles.get(index)!.length * CHAR_WIDTH + 2 * PAD_X),
        scene.height + HEADER + INSET]);
    } else {
      sizes.push([node.w, node.h]);
    }
  });
  const widths = nodes.map(node => node.w).sort((a, b) => a - b);
  const column = Math.min(widths.length ? widths[Math.floor(widths.length / 2)] : 0, MAX_COLUMN) + GAP_X;
  const depth = picture.depth;
  const tallest: number[] = new Array(depth).fill(0);
  nodes.forEach((node, index) => {
    tallest[node.layer] = Math.max(tallest[node.layer], sizes[index][1]);
  });
  const tops: number[] = [];
  let bottom = MARGIN;
  for (const height of tallest) {
    tops.push(bottom);
    bottom += height + GAP_Y;
  }
  bottom -= depth ? GAP_Y : 0;
  const rows: Array<Array<[number, number, Ref]>> = Array.from({ length: depth }, () => []);
  nodes.forEach((node, index) => rows[node.layer].push([node.col, 0, ['node', index]]));
  ports.forEach((port, index) => rows[port.layer].push([port.col, 0, ['port', index]]));
  edges.forEach((edge, number) => edge.bends.forEach(([col, layer], bend) => rows[layer].push([col, 1, ['bend', number, bend]])));
  const centres = new Map<string, number>();
  let right = 0;
  for (const row of rows) {
    row.sort((a, b) => (a[0] - b[0]) || (a[1] - b[1]));
    let reach = MARGIN;
    for (const [col, isBend, ref] of row) {
      const ideal = (col - picture.left) * column + column / 2 + MARGIN;
      const half = isBend ? GAP_X / 2 : ref[0] === 'node' ? sizes[ref[1]][0] / 2 : 0;
      const centre = Math.max(ideal, reach + half);
      reach = centre + half + (isBend ? 0 : GAP_X / 2);
      right = Math.max(right, centre + half);
      centres.set(ref.join(':'), centre);
    }
  }
  const width = right + MARGIN;
  const scene: Scene = { width, height: bottom + MARGIN, boxes: [], edges: [], inX: width / 2, outX: width / 2 };
  const placed: SceneBox[] = nodes.map((node, index) => {
    const [w, h] = sizes[index];
    const { layer, col, ...rest } = node;
    void col;
    const box: SceneBox = { ...rest, x: centres.get(`node:${index}`)!, y: tops[layer] + (tallest[layer] - h) / 2, w, h,
      expanded: inner.has(index) };
    if (inner.has(index)) {
      box.lines = [titles.get(index)!];
    }
    return box;
  });
  const portX = new Map<string, number>();
  const portY = new Map<string, number>();
  ports.forEach((port, index) => {
    portX.set(port.side, centres.get(`port:${index}`)!);
    portY.set(port.side, tops[port.layer] + (port.side === 'out' ? tallest[port.layer] : 0));
  });
  scene.inX = portX.get('in') ?? scene.inX;
  scene.outX = portX.get('out') ?? scene.outX;
  const tailPoint = (end: number): number[] => {
    if (end < 0) {
      return [portX.get('in')!, portY.get('in')!];
    }
    const box = placed[end];
    const x = inner.has(end) ? box.x - box.w / 2 + INSET + inner.get(end)!.outX : box.x;
    return [x, box.y + box.h];
  };
  const headPoint = (end: number): number[] => {
    if (end < 0) {
      return [portX.get('out')!, portY.get('out')!];
    }
    const box = placed[end];
    const x = inner.has(end) ? box.x - box.w / 2 + INSET + inner.get(end)!.inX : box.x;
    return [x, box.y];
  };
  edges.forEach((edge, number) => {
    const tail = edge.from;
    const head = edge.to;
    const start = tailPoint(tail);
    const end = headPoint(head);
    const points = [start];
    if (tail >= 0) {
      const layer = nodes[tail].layer;
      if (start[1] < tops[layer] + tallest[layer]) {
        points.push([start[0], tops[layer] + tallest[layer]]);
      }
    }
    edge.bends.forEach(([, layer], bend) => {
      const x = centres.get(`bend:${number}:${bend}`)!;
      points.push([x, tops[layer]], [x, tops[layer] + tallest[layer]]);
    });
    if (head >= 0 && end[1] > tops[nodes[head].layer]) {
      points.push([end[0], tops[nodes[head].layer]]);
    }
    points.push(end);
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
