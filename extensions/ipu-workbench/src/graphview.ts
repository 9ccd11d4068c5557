/**
 * The graph view: one graph drawn as SVG, call ops expandable in place into the graphs they call,
 * hover details, and a search that highlights matching ops and tensors. Where the document ships the
 * graph's layering (`graph_layers`: the notebook's layers and order) it is placed at once, wrapped to the
 * output's width (`shippedlayout.ts`). Else layouts arrive asynchronously (ELK runs in a worker): the
 * drawing on screen stays until the next one is ready, then is replaced in one step, and only the latest
 * layout asked for is drawn. The canvas is `aria-busy` meanwhile.
 */
import { Details } from './details.js';
import type { GraphOpening } from './generated/document.js';
import { button, clear, el, svg } from './dom.js';
import { arrange, fitsElk } from './elklayout.js';
import { buildLayout, countNodes, foldedLines, GraphLayout, LayoutEdge, LayoutEngine, LayoutNode, MAX_DEPTH, NODE_HEIGHT, nodeKey, placeInLayers,
  Point, shippedLayering, SUBLINE_HEIGHT } from './layout.js';
import { labelWidths, shorten, TextWidth } from './measure.js';
import { GraphRecord, IrIndex, OpRecord, TensorRecord } from './model.js';
import { isShipped, placeShipped } from './shippedlayout.js';
import { ipuColour } from './visual.js';

/**
 * Above this many nodes a graph is shown grouped (its grouped picture, where the document has one) and drawn op
 * by op only when asked: in headless Chromium the 10,003 ops of one graph took 3.6 s to draw, the page frozen
 * throughout, into a drawing 689,000 px tall; its grouped picture opens in a fraction of a second.
 */
export const MAX_DRAWN_NODES = 5000;

/** The grouped picture of a graph, where the document has one (`GroupView`, as the Model tab shows it). */
export type GroupedPicture = (graphId: string) => HTMLElement | undefined;
/** Pixels left above and to the left of a node scrolled to. */
const SCROLL_MARGIN = 24;
/** The radius of an edge's bends. */
const BEND_RADIUS = 5;
/** Pixels the output's width must change by before a drawing wrapped to its width is laid out again. */
const REFIT_STEP = 8;
/** Pixels kept free for the canvas's vertical scroll bar, which a tall drawing brings. */
const SCROLLBAR = 16;

export class GraphView {
  readonly node: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly searchBox: HTMLInputElement;
  private readonly status: HTMLElement;
  private readonly expandMatches: HTMLButtonElement;
  /** Back to the grouped picture a graph opens with, once every op of it was drawn on request. */
  private readonly regroup: HTMLButtonElement;
  private readonly canvas: HTMLElement;
  private readonly note: HTMLElement;
  private readonly widths: TextWidth;
  private readonly expanded = new Set<string>();
  /** Counts the drawings asked for: a layout that arrives after a newer one was asked for is dropped. */
  private generation = 0;
  private drawn: { element: SVGElement; op?: OpRecord; tensor?: TensorRecord; lines?: string[] }[] = [];
  private graphId: string;
  private query = '';
  private drawLarge = false;
  /** Whether the view has been shown: until then nothing is laid out, so a hidden tab costs nothing. */
  private started = false;
  /** The canvas's width the drawing was laid out for (0: not measured, off the page), and the drawing shown. */
  private room = 0;
  private shown: GraphLayout | undefined;

  constructor(private readonly doc: Document, private readonly index: IrIndex, private readonly details: Details, graphId: string,
    private readonly grouped: GroupedPicture = () => undefined) {
    this.graphId = index.graphs.has(graphId) ? graphId : index.main.id;
    this.select = el(doc, 'select', 'ipu-wb-graph-select');
    for (const graph of index.doc.graphs) {
      const option = el(doc, 'option', '', [graph.label]);
      option.value = graph.id;
      this.select.appendChild(option);
    }
    this.select.value = this.graphId;
    this.select.addEventListener('change', () => this.show(this.select.value));
    this.searchBox = el(doc, 'input', 'ipu-wb-search');
    this.searchBox.type = 'search';
    this.searchBox.placeholder = 'search ops and tensors';
    this.searchBox.addEventListener('input', () => this.search(this.searchBox.value));
    this.status = el(doc, 'span', 'ipu-wb-search-status');
    this.expandMatches = button(doc, 'expand to matches', 'ipu-wb-expand-matches', () => this.expandToMatches());
    this.regroup = button(doc, 'show grouped', 'ipu-wb-show-grouped', () => {
      this.drawLarge = false;
      this.expanded.clear();
      this.redraw();
    });
    this.regroup.hidden = true;
    this.canvas = el(doc, 'div', 'ipu-wb-canvas');
    this.note = el(doc, 'span', 'ipu-wb-layout-note');
    this.widths = labelWidths(doc);
    const fit = el(doc, 'input', 'ipu-wb-fit-toggle');
    fit.type = 'checkbox';
    fit.addEventListener('change', () => this.canvas.classList.toggle('ipu-wb-fit', fit.checked));
    const toolbar = el(doc, 'div', 'ipu-wb-toolbar', [
      el(doc, 'label', '', ['graph ', this.select]),
      button(doc, 'expand all', 'ipu-wb-expand-all', () => this.expandAll()),
      button(doc, 'collapse all', 'ipu-wb-collapse-all', () => this.collapseAll()),
      el(doc, 'label', 'ipu-wb-fit-label', [fit, 'fit width']),
      this.regroup, this.searchBox, this.expandMatches, this.status, this.note
    ]);
    this.node = el(doc, 'div', 'ipu-wb-graph-view', [toolbar, this.canvas]);
    const Observer = doc.defaultView?.ResizeObserver;
    if (Observer !== undefined) {  // laid out again for the output's width once on the page, and on each resize
      new Observer(() => this.refit()).observe(this.canvas);
    }
  }

  /**
   * The pixels of width a drawing may take: the canvas's, less room for a vertical scroll bar it does not
   * show yet (0 while it is off the page, where any width will do).
   */
  private measuredRoom(): number {
    const width = this.canvas.clientWidth;
    if (width > 0) {
      this.room = Math.min(width, this.canvas.offsetWidth - SCROLLBAR);
    }
    return this.room;
  }

  /** Lays the drawing out again where the canvas's width has changed and the drawing was wrapped or is too wide for it. */
  private refit(): void {
    const shown = this.shown;
    const width = this.canvas.clientWidth;
    if (!this.started || shown === undefined || width <= 0) {
      return;
    }
    const room = Math.min(width, this.canvas.offsetWidth - SCROLLBAR);
    if (Math.abs(room - this.room) > REFIT_STEP && (shown.wrapped || shown.width > room)) {
      this.redraw();
    }
  }

  /** Draws the view the first time it is shown (later calls do nothing). */
  activate(): void {
    if (!this.started) {
      this.started = true;
      this.redraw();
    }
  }

  /** Shows `graphId` as the outermost graph. */
  show(graphId: string): void {
    this.graphId = graphId;
    this.drawLarge = false;
    this.select.value = graphId;
    this.redraw();
  }

  /** Expands or collapses the call op whose node key is `key`, keeping it in sight. */
  toggle(key: string): void {
    if (!this.expanded.delete(key)) {
      this.expanded.add(key);
    }
    this.redraw(layout => positionOf(layout, key));
  }

  /** Expands every call, then scrolls to the innermost body the first one opened (see `innermostBody`). */
  expandAll(): void {
    this.walkCalls(this.graphId, '', 0, () => true);
    this.redraw(innermostBody);
  }

  collapseAll(): void {
    this.expanded.clear();
    this.redraw();
  }

  /** Highlights ops and tensors whose name, id or type contains `query` (case-insensitive). */
  search(query: string): void {
    this.query = query.trim().toLowerCase();
    if (this.searchBox.value !== query) {
      this.searchBox.value = query;
    }
    this.highlight();
  }

  /** Expands every call op on the way to a match hidden in a collapsed call. */
  expandToMatches(): void {
    this.walkCalls(this.graphId, '', 0, callee => this.matchesBelow(callee, 0) > 0);
    this.redraw(layout => {
      const key = this.canvas.querySelector('.ipu-wb-match')?.getAttribute('data-key');
      return key ? positionOf(layout, key) : undefined;
    });
  }

  private walkCalls(graphId: string, path: string, depth: number, open: (callee: string) => boolean): void {
    if (depth >= MAX_DEPTH) {
      return;
    }
    for (const op of this.index.graphs.get(graphId)?.ops ?? []) {
      const key = nodeKey(path, op.id);
      const wanted = op.called_graphs.filter(open);
      if (wanted.length) {
        this.expanded.add(key);
        for (const callee of wanted) {
          this.walkCalls(callee, `${key}>${callee}`, depth + 1, open);
        }
      }
    }
  }

  /**
   * Lays the graph out again and draws it when the layout is ready; `focus` gives the point to scroll
   * to once drawn (by default the graph's first op where it lies off the first screen, else the top left).
   * Until then the canvas keeps what it shows, or says it is laying out.
   */
  private redraw(focus: (layout: GraphLayout) => Point | undefined = layout => this.firstOpOffScreen(layout)): void {
    if (!this.started) {
      return;
    }
    const generation = ++this.generation;
    const nodes = this.nodeCount(this.graphId, '', 0);
    const opens = this.expanded.size === 0 ? this.opening(this.graphId) : undefined;
    this.regroup.hidden = !(this.drawLarge && this.opening(this.graphId)?.grouped);
    if ((nodes > MAX_DRAWN_NODES || opens?.grouped) && !this.drawLarge) {
      const label = this.index.graphs.get(this.graphId)?.label ?? this.graphId;
      const picture = this.expanded.size === 0 ? this.grouped(this.graphId) : undefined;
      const count = nodes.toLocaleString('en');
      const why = opens?.why === 'tall' && opens.rows !== null ?
        `Graph ${label}: its ops one by one take ${opens.rows} rows, more than a screen holds` :
        `Graph ${label} has ${count} ops and tensors`;
      this.replaceDrawing(el(this.doc, 'div', 'ipu-wb-large', [
        picture ? `${why}: shown grouped, as the Model tab shows it (click a group to open it). ` +
          (opens?.why === 'tall' ? '' : 'Drawing every op takes the browser seconds. ') :
          `Graph ${label} has ${count} ops and tensors to draw, which can take the browser a while. `,
        button(this.doc, picture ? 'draw every op' : 'draw it', 'ipu-wb-draw-large', () => {
          this.drawLarge = true;
          this.redraw();
        })
      ]), '');
      if (picture) {
        this.canvas.appendChild(picture);
        this.canvas.setAttribute('data-opens', opens?.grouped ? opens.why : 'large');
      }
      return;
    }
    this.canvas.removeAttribute('data-opens');
    const layout = buildLayout(this.index, this.graphId, this.expanded, this.widths);
    if (isShipped(layout)) {  // the layering the document ships: placed in milliseconds, wrapped to the output's width
      placeShipped(layout, this.measuredRoom());
      this.draw(layout, '', focus);
      return;
    }
    if (!fitsElk(layout)) {
      placeInLayers(layout);
      this.draw(layout, `${countNodes(layout).toLocaleString('en')} nodes: drawn in plain layers, edges may cross nodes`, focus);
      return;
    }
    if (this.canvas.querySelector(':scope > .ipu-wb-graph-svg') === null) {
      this.replaceDrawing(el(this.doc, 'div', 'ipu-wb-laying-out', [`Laying out ${countNodes(layout).toLocaleString('en')} nodes…`]), '');
    }
    this.canvas.setAttribute('aria-busy', 'true');
    const showUnwrapped = (placed: GraphLayout): void => {
      if (generation === this.generation) {
        this.draw(placed, 'wrapping wide layers to the output\'s width…', focus);
        this.canvas.setAttribute('aria-busy', 'true');
      }
    };
    arrange(layout, undefined, this.measuredRoom(), showUnwrapped).then(byElk => {
      if (generation === this.generation) {
        this.draw(layout, byElk ? '' : 'the layout engine failed: drawn in plain layers, edges may cross nodes', focus);
      }
    }).catch(error => {
      if (generation === this.generation) {
        this.replaceDrawing(el(this.doc, 'div', 'ipu-wb-error', [`Cannot draw this graph: ${String(error)}`]), '');
      }
    });
  }

  /** Shows `layout`, placed, in place of what the canvas shows, with `note` in the toolbar, and scrolls to `focus`. */
  private draw(layout: GraphLayout, note: string, focus: (layout: GraphLayout) => Point | undefined): void {
    const root = svg(this.doc, 'svg', { class: 'ipu-wb-graph-svg', width: layout.width, height: layout.height,
      viewBox: `0 0 ${layout.width} ${layout.height}`, 'data-engine': layout.engine });
    this.drawn = [];
    this.shown = layout;
    root.appendChild(this.drawLayout(layout));
    this.replaceDrawing(root, note);
    this.scrollTo(layout, focus(layout));
  }

  /** Puts `content` in the canvas in one step, ends the busy state and highlights the search's matches. */
  private replaceDrawing(content: HTMLElement | SVGElement, note: string): void {
    if (!content.classList.contains('ipu-wb-graph-svg')) {
      this.drawn = [];
    }
    clear(this.canvas);
    this.canvas.appendChild(content);
    this.canvas.removeAttribute('aria-busy');
    this.note.textContent = note;
    this.highlight();
  }

  /**
   * Where the outermost graph's first op is, when the canvas's first screen would not show it: a graph
   * wider than its output (a layer of many weights) would otherwise open on empty edges.
   */
  private firstOpOffScreen(layout: GraphLayout): Point | undefined {
    const first = this.index.graphs.get(this.graphId)?.ops[0];
    const node = first && layout.nodes.find(n => n.op === first);
    const at = node && positionOf(layout, node.key);
    const width = this.canvas.clientWidth;
    const height = this.canvas.clientHeight;
    if (!node || !at || width <= 0 || this.canvas.classList.contains('ipu-wb-fit')) {
      return undefined;
    }
    return at.x + node.width > width || at.y + node.height > height ? at : undefined;
  }

  /** Scrolls the canvas so that node `key` sits near its top left (scaled when fitted to the width). */
  private scrollTo(layout: GraphLayout, at: Point | undefined): void {
    const width = this.canvas.clientWidth;
    const scale = this.canvas.classList.contains('ipu-wb-fit') && width > 0 && width < layout.width ? width / layout.width : 1;
    this.canvas.scrollLeft = at ? Math.max(0, at.x * scale - SCROLL_MARGIN) : 0;
    this.canvas.scrollTop = at ? Math.max(0, at.y * scale - SCROLL_MARGIN) : 0;
  }

  private drawLayout(layout: GraphLayout): SVGElement {
    const group = svg(this.doc, 'g', { class: 'ipu-wb-graph', transform: `translate(${layout.x},${layout.y})` });
    const byKey = new Map(layout.nodes.map(n => [n.key, n]));
    for (const edge of layout.edges) {
      const from = byKey.get(edge.from);
      const to = byKey.get(edge.to);
      if (from && to) {
        group.appendChild(this.drawEdge(edge, from, to, layout.engine));
      }
    }
    for (const node of layout.nodes) {
      group.appendChild(this.drawNode(layout.graph, node));
    }
    return group;
  }

  private drawEdge(edge: LayoutEdge, from: LayoutNode, to: LayoutNode, engine: LayoutEngine): SVGElement {
    const path = svg(this.doc, 'path', {
      class: edge.tensor ? 'ipu-wb-edge' : 'ipu-wb-edge ipu-wb-edge-order',
      d: engine === 'layers' ? curvedPath(edge.points) : roundedPath(edge.points)
    }, [svg(this.doc, 'title', {}, [edge.tensor ? edge.tensor.id : `${from.label} before ${to.label}`])]);
    const tensor = edge.tensor;
    path.addEventListener('mouseenter', () =>
      tensor ? this.details.showTensor(tensor) : this.details.show('in_sequence', [`${from.label} runs before ${to.label}`]));
    return path;
  }

  private drawNode(graph: GraphRecord, node: LayoutNode): SVGElement {
    const op = node.op;
    const callable = op !== undefined && op.called_graphs.length > 0;
    const open = node.inner.length > 0;
    const classes = ['ipu-wb-node', `ipu-wb-${node.kind}`];
    if (callable) {
      classes.push('ipu-wb-callable', open ? 'ipu-wb-open' : 'ipu-wb-closed');
    }
    const group = svg(this.doc, 'g', { class: classes.join(' '), transform: `translate(${node.x},${node.y})`, 'data-key': node.key });
    if (op) {
      group.style.setProperty('--ipu-wb-ipu-fill', ipuColour(op.ipu));
    }
    const title = op ? `${op.type} ${op.name}` : node.tensor ? node.tensor.id : node.label;
    group.appendChild(svg(this.doc, 'title', {}, [title]));
    group.appendChild(svg(this.doc, 'rect', { class: 'ipu-wb-box', width: node.width, height: node.height, rx: node.kind === 'op' ? 4 : 12 }));
    const text = svg(this.doc, 'text', { class: 'ipu-wb-label', x: open ? 8 : node.width / 2, y: open ? 16 : NODE_HEIGHT / 2 + 4,
      'text-anchor': open ? 'start' : 'middle' }, [shorten(node.label)]);
    group.appendChild(text);
    node.sublines.forEach((line, number) => group.appendChild(svg(this.doc, 'text', { class: 'ipu-wb-subline',
      x: node.width / 2, y: NODE_HEIGHT + SUBLINE_HEIGHT * number + 6, 'text-anchor': 'middle' }, [line])));
    if (op) {
      const header = open ? text : group;
      header.addEventListener('mouseenter', () => this.details.showOp(this.index, graph.id, op));
      if (callable) {
        header.addEventListener('click', event => {
          event.stopPropagation();
          this.toggle(node.key);
        });
      }
      this.drawn.push({ element: group, op, lines: node.sublines });
    } else if (node.tensor && node.kind !== 'output') {
      const tensor = node.tensor;
      group.addEventListener('mouseenter', () => this.details.showTensor(tensor));
      this.drawn.push({ element: group, tensor });
    }
    for (const inner of node.inner) {
      const frame = this.drawLayout(inner);
      frame.insertBefore(svg(this.doc, 'rect', { class: 'ipu-wb-frame', width: inner.width, height: inner.height, rx: 6 }), frame.firstChild);
      frame.appendChild(svg(this.doc, 'text', { class: 'ipu-wb-frame-label', x: 4, y: -4 }, [inner.title]));
      group.appendChild(frame);
    }
    return group;
  }

  private highlight(): void {
    const root = this.canvas.firstElementChild;
    root?.classList.toggle('ipu-wb-searching', this.query !== '');
    let shown = 0;
    for (const item of this.drawn) {
      const hit = this.query !== '' && (item.op ? this.opMatches(item.op) || (item.lines ?? []).some(line => line.toLowerCase().includes(this.query))
        : item.tensor ? tensorMatches(item.tensor, this.query) : false);
      item.element.classList.toggle('ipu-wb-match', hit);
      shown += hit ? 1 : 0;
    }
    const hidden = this.query === '' ? 0 : this.hiddenMatches(this.graphId, '', 0);
    this.status.textContent = this.query === '' ? '' :
      `${shown} shown` + (hidden ? `, ${hidden} inside collapsed calls` : '');
    this.expandMatches.hidden = hidden === 0;
  }

  /**
   * How the document says graph `graphId` opens (`grouped.graphs[].opens`, decided once by the Python side for
   * the notebook and the extension alike): grouped, or op by op; undefined for a document without it.
   */
  private opening(graphId: string): GraphOpening | undefined {
    return this.index.doc.grouped?.graphs.find(graph => graph.graph === graphId)?.opens;
  }

  private opMatches(op: OpRecord): boolean {
    const q = this.query;
    return op.name.toLowerCase().includes(q) || op.type.toLowerCase().includes(q) || op.id.toLowerCase().includes(q);
  }

  /** About how many nodes the drawing of `graphId` has, with the calls expanded as they are now. */
  private nodeCount(graphId: string, path: string, depth: number): number {
    const graph = this.index.graphs.get(graphId);
    if (!graph || depth >= MAX_DEPTH) {
      return 0;
    }
    const layering = foldedLines(this.index).size > 0 ? shippedLayering(this.index, graphId) : undefined;
    let count = layering?.nodes.length ?? graph.ops.length + graph.tensors.length;
    for (const op of graph.ops) {
      const key = nodeKey(path, op.id);
      if (op.called_graphs.length && this.expanded.has(key)) {
        for (const callee of op.called_graphs) {
          count += this.nodeCount(callee, `${key}>${callee}`, depth + 1);
        }
      }
    }
    return count;
  }

  /** Matches in graphs that collapsed call ops of the drawn view would show. */
  private hiddenMatches(graphId: string, path: string, depth: number): number {
    let count = 0;
    for (const op of this.index.graphs.get(graphId)?.ops ?? []) {
      const key = nodeKey(path, op.id);
      for (const callee of op.called_graphs) {
        if (depth + 1 >= MAX_DEPTH) {
          continue;
        }
        count += this.expanded.has(key) ? this.hiddenMatches(callee, `${key}>${callee}`, depth + 1) : this.matchesBelow(callee, depth + 1);
      }
    }
    return count;
  }

  /** Matching ops and source tensors in `graphId` and, expanded, in everything it calls. */
  private matchesBelow(graphId: string, depth: number): number {
    const graph = this.index.graphs.get(graphId);
    if (!graph || depth >= MAX_DEPTH) {
      return 0;
    }
    let count = graph.tensors.filter(t => t.producer === null && tensorMatches(t, this.query)).length;
    for (const op of graph.ops) {
      count += this.opMatches(op) ? 1 : 0;
      for (const callee of op.called_graphs) {
        count += this.matchesBelow(callee, depth + 1);
      }
    }
    return count;
  }
}

/**
 * Where expand all scrolls to: the top-left corner of the first body the first expanded call holds, or,
 * when that body has expanded calls, of the first body of its first one, and so on inwards. (An outer
 * body's top is often only its inputs, with long edges down to the calls inside.)
 */
export function innermostBody(layout: GraphLayout): Point | undefined {
  let call = layout.nodes.find(node => node.inner.length > 0);
  if (call === undefined) {
    return undefined;
  }
  let x = layout.x + call.x;
  let y = layout.y + call.y;
  while (call !== undefined) {
    const body: GraphLayout = call.inner[0];
    x += body.x;
    y += body.y;
    call = body.nodes.find(node => node.inner.length > 0);
    if (call !== undefined) {
      x += call.x;
      y += call.y;
    }
  }
  return { x, y };
}

/** Where node `key` is drawn, in the coordinates of the whole drawing (nested layouts add up). */
export function positionOf(layout: GraphLayout, key: string, left = 0, top = 0): { x: number; y: number } | undefined {
  const x0 = left + layout.x;
  const y0 = top + layout.y;
  for (const node of layout.nodes) {
    if (node.key === key) {
      return { x: x0 + node.x, y: y0 + node.y };
    }
    for (const inner of node.inner) {
      const found = positionOf(inner, key, x0 + node.x, y0 + node.y);
      if (found) {
        return found;
      }
    }
  }
  return undefined;
}

function tensorMatches(tensor: TensorRecord, query: string): boolean {
  return tensor.name.toLowerCase().includes(query) || tensor.id.toLowerCase().includes(query);
}

/** A route through `points`, its bends rounded off (ELK's orthogonal routes). */
export function roundedPath(points: Point[]): string {
  const parts = [`M${points[0].x},${points[0].y}`];
  for (let i = 1; i < points.length - 1; i++) {
    const [before, at, after] = [points[i - 1], points[i], points[i + 1]];
    const r = Math.min(BEND_RADIUS, distance(before, at) / 2, distance(at, after) / 2);
    const into = towards(at, before, r);
    const out = towards(at, after, r);
    parts.push(`L${into.x},${into.y}`, `Q${at.x},${at.y} ${out.x},${out.y}`);
  }
  const last = points[points.length - 1];
  parts.push(`L${last.x},${last.y}`);
  return parts.join(' ');
}

/** A curve from the first point to the last, leaving and arriving vertically (the plain layering's edges). */
function curvedPath(points: Point[]): string {
  const { x: x1, y: y1 } = points[0];
  const { x: x2, y: y2 } = points[points.length - 1];
  const bend = Math.max(12, (y2 - y1) / 2);
  return `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`;
}

function distance(a: Point, b: Point): number {
  return Math.hypot(b.x - a.x, b.y - a.y);
}

/** The point `length` from `from` towards `to`. */
function towards(from: Point, to: Point, length: number): Point {
  const d = distance(from, to);
  return d === 0 ? from : { x: from.x + ((to.x - from.x) * length) / d, y: from.y + ((to.y - from.y) * length) / d };
}
