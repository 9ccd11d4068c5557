/**
 * The grouped model view: one group of one graph at a time, its child groups drawn as labelled boxes
 * with their op counts, its ops as Netron-like boxes (type, distinguishing attribute, folded weights).
 * Clicking a group expands it in place (a frame around its own picture; clicking the frame's title
 * closes it), clicking a call opens the graph it calls; the breadcrumb names every group down to the one
 * last expanded and shows any of them alone. Every picture was laid out once by the Python side (the
 * document's `grouped` section), the same one the notebook draws; the page only composes the expanded
 * pictures by arithmetic (`compose.ts`), so a graph of any size opens at once. A tall picture folds to the
 * width of its output (measured, and again whenever the output is resized); one still a little wider is
 * drawn smaller to fit, and one much wider keeps its size and scrolls sideways, as the toolbar says.
 */
import { Details } from './details.js';
import { compose, expandedChain, FOLD_WIDTH, HEADER, Scene, SceneBox } from './compose.js';
import { button, clear, el, svg } from './dom.js';
import type { GroupedGraph, GroupPicture } from './generated/document.js';
import { IrIndex } from './model.js';
import { countOf, ipuColour } from './visual.js';

const LINE_HEIGHT = 15;
const PAD_Y = 6;
const PAD_X = 8;
const ARROW_ID = 'ipu-wb-arrow';
/** A picture wider than its output is drawn down to this scale to fit it (its text still readable), else scrolls. */
const SMALLEST_SCALE = 0.75;
/** Pixels the output's width must change by before the picture is laid out again. */
const REFIT_STEP = 8;

export class GroupView {
  readonly node: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly crumbs: HTMLElement;
  private readonly canvas: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly note: HTMLElement;
  private readonly graphs = new Map<string, GroupedGraph>();
  private readonly pictures = new Map<string, GroupPicture>();
  private current: GroupPicture | undefined;
  private expandedGroups = new Set<string>();
  private last = '';
  /** The canvas's width the picture on screen was laid out for (0: not measured yet, off the page). */
  private room = 0;

  /** `chooser`: a menu of the graphs in its toolbar (left out where the view sits in the Graph tab, which has one). */
  constructor(private readonly doc: Document, private readonly index: IrIndex, private readonly details: Details,
    graphId: string, chooser = true) {
    for (const graph of index.doc.grouped?.graphs ?? []) {
      this.graphs.set(graph.graph, graph);
      for (const picture of graph.groups) {
        this.pictures.set(picture.id, picture);
      }
    }
    this.select = el(doc, 'select', 'ipu-wb-group-select');
    for (const graph of index.doc.graphs) {
      const option = el(doc, 'option', '', [graph.label]);
      option.value = graph.id;
      this.select.appendChild(option);
    }
    this.select.addEventListener('change', () => this.showGraph(this.select.value));
    this.crumbs = el(doc, 'span', 'ipu-wb-crumbs');
    this.canvas = el(doc, 'div', 'ipu-wb-group-canvas');
    this.legend = el(doc, 'div', 'ipu-wb-legend');
    this.note = el(doc, 'span', 'ipu-wb-group-note');
    this.node = el(doc, 'div', 'ipu-wb-group-view', [
      el(doc, 'div', 'ipu-wb-toolbar', [...(chooser ? [el(doc, 'label', '', ['graph ', this.select])] : []), this.crumbs, this.note]),
      this.canvas, this.legend
    ]);
    this.showGraph(index.graphs.has(graphId) ? graphId : index.main.id);
    const Observer = doc.defaultView?.ResizeObserver;
    if (Observer !== undefined) {  // laid out again for the output's width once on the page, and on each resize
      new Observer(() => this.refit()).observe(this.canvas);
    }
  }

  /** Lays the picture out again where the canvas's width has changed (not while it is hidden). */
  private refit(): void {
    const width = this.canvas.clientWidth;
    if (this.current !== undefined && width > 0 && Math.abs(width - this.room) > REFIT_STEP) {
      this.redraw(false);
    }
  }

  /** The pixels of width a picture may take: the canvas's, where it is on the page. */
  private measuredRoom(): number {
    const width = this.canvas.clientWidth;
    if (width > 0) {
      this.room = width;
    }
    return this.room > 0 ? this.room : FOLD_WIDTH;
  }

  /** Whether the document has grouped pictures to show. */
  get available(): boolean {
    return this.graphs.size > 0;
  }

  /** Whether the document has the grouped picture of graph `graphId`. */
  has(graphId: string): boolean {
    return this.graphs.has(graphId);
  }

  /** Opens graph `graphId` at its top level. */
  showGraph(graphId: string): void {
    const graph = this.graphs.get(graphId);
    this.select.value = graphId;
    if (graph === undefined) {
      this.current = undefined;
      clear(this.canvas);
      this.canvas.appendChild(el(this.doc, 'div', 'ipu-wb-error', ['This document has no grouped picture of this graph.']));
      return;
    }
    this.open(graph.root);
  }

  /** Shows the group `groupId` (of any graph) alone; the groups expanded inside it stay so. */
  open(groupId: string): void {
    const picture = this.pictures.get(groupId);
    if (picture === undefined) {
      return;
    }
    if (this.current === undefined || this.graphOf(picture) !== this.graphOf(this.current)) {
      this.expandedGroups = new Set();
      this.last = '';
    }
    this.current = picture;
    this.redraw(true);
  }

  /** Draws group `groupId` in place with its contents (and the groups around it likewise). */
  expand(groupId: string): void {
    if (this.current === undefined || !this.pictures.has(groupId)) {
      return;
    }
    const pictureOf = (id: string) => this.pictures.get(id);
    let chain = expandedChain(pictureOf, this.current.id, groupId);
    if (chain === null) {
      this.current = this.pictures.get(this.graphs.get(this.graphOf(this.current))!.root)!;
      chain = expandedChain(pictureOf, this.current.id, groupId) ?? [];
    }
    chain.forEach(id => this.expandedGroups.add(id));
    this.last = groupId;
    this.redraw(false);
  }

  /** Draws group `groupId` as one box again (the groups inside it close too). */
  collapse(groupId: string): void {
    const pictureOf = (id: string) => this.pictures.get(id);
    for (const id of [...this.expandedGroups]) {
      if (id === groupId || expandedChain(pictureOf, groupId, id) !== null) {
        this.expandedGroups.delete(id);
      }
    }
    if (!this.expandedGroups.has(this.last)) {
      this.last = this.pictures.get(groupId)?.parent ?? '';
    }
    this.redraw(false);
  }

  /** The groups drawn in place. */
  get expanded(): ReadonlySet<string> {
    return this.expandedGroups;
  }

  /** The group on screen. */
  get shown(): GroupPicture | undefined {
    return this.current;
  }

  /** The picture on screen, composed. */
  scene(): Scene | undefined {
    return this.current && compose(id => this.pictures.get(id)!, this.current.id, this.expandedGroups, this.measuredRoom());
  }

  private graphOf(picture: GroupPicture): string {
    let at = picture;
    while (at.parent !== null) {
      at = this.pictures.get(at.parent)!;
    }
    return [...this.graphs.values()].find(graph => graph.root === at.id)?.graph ?? '';
  }

  private redraw(scrollHome: boolean): void {
    const picture = this.current!;
    const scene = this.scene()!;
    const crumbEnd = this.expandedGroups.has(this.last) ? this.pictures.get(this.last)! : picture;
    this.drawCrumbs(crumbEnd);
    const top = this.canvas.scrollTop;
    const left = this.canvas.scrollLeft;
    clear(this.canvas);
    this.canvas.appendChild(this.draw(picture, scene));
    this.canvas.scrollTop = scrollHome ? 0 : top;
    this.canvas.scrollLeft = scrollHome ? 0 : left;
    this.drawLegend(scene);
  }

  private drawCrumbs(picture: GroupPicture): void {
    const chain: GroupPicture[] = [];
    for (let at: GroupPicture | undefined = picture; at !== undefined; at = at.parent === null ? undefined : this.pictures.get(at.parent)) {
      chain.unshift(at);
    }
    clear(this.crumbs);
    chain.forEach((group, i) => {
      if (i > 0) {
        this.crumbs.appendChild(el(this.doc, 'span', 'ipu-wb-crumb-sep', [' › ']));
      }
      const label = `${group.label} (${countOf(group.ops, 'op')})`;
      this.crumbs.appendChild(i === chain.length - 1 && group.id === this.current?.id ? el(this.doc, 'span', 'ipu-wb-crumb ipu-wb-crumb-here', [label])
        : button(this.doc, label, 'ipu-wb-crumb', () => this.open(group.id)));
    });
  }

  private draw(picture: GroupPicture, scene: Scene): SVGElement {
    const room = this.room > 0 ? this.room : scene.width;
    const scale = scene.width > room && room / scene.width >= SMALLEST_SCALE ? room / scene.width : 1;
    this.note.textContent = scene.width * scale > room + 1 ? `${Math.round(scene.width)} px wide: scroll sideways` :
      scale < 1 ? `drawn at ${Math.round(100 * scale)}% to fit` : '';
    const root = svg(this.doc, 'svg', { class: 'ipu-wb-group-svg', width: scene.width * scale, height: scene.height * scale,
      viewBox: `0 0 ${scene.width} ${scene.height}`, 'data-group': picture.id });
    root.appendChild(svg(this.doc, 'defs', {}, [svg(this.doc, 'marker', { id: ARROW_ID, viewBox: '0 0 10 10', refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, [svg(this.doc, 'path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'ipu-wb-arrowhead' })])]));
    const edges = svg(this.doc, 'g', { class: 'ipu-wb-edges' });
    const labels = new Map(scene.boxes.map(box => [box.key, box.lines[0]]));
    for (const edge of scene.edges) {
      const d = edge.points.map(([x, y], i) => `${i ? 'L' : 'M'} ${x} ${y}`).join(' ');
      const title = `${edge.label}\n${labels.get(edge.tail ?? '') ?? 'outside'} → ${labels.get(edge.head ?? '') ?? 'outside'}`;
      const arrow: Record<string, string> = edge.arrow ? { 'marker-end': `url(#${ARROW_ID})` } : {};
      edges.appendChild(svg(this.doc, 'g', { class: 'ipu-wb-group-edge' }, [
        svg(this.doc, 'path', { class: 'ipu-wb-edge-hit', d }, [svg(this.doc, 'title', {}, [title])]),
        svg(this.doc, 'path', { class: 'ipu-wb-edge', d, ...arrow }, [svg(this.doc, 'title', {}, [title])])
      ]));
    }
    for (const box of scene.boxes.filter(b => b.expanded)) {
      root.appendChild(this.drawBox(box));
    }
    root.appendChild(edges);
    for (const box of scene.boxes.filter(b => b.expanded)) {  // over the edges that cross its band
      const title = svg(this.doc, 'g', { class: 'ipu-wb-frame-title', transform: `translate(${box.x - box.w / 2},${box.y})`,
        'data-key': box.key }, [svg(this.doc, 'text', { class: 'ipu-wb-label ipu-wb-pbox-title ipu-wb-frame-label', x: PAD_X,
        y: PAD_Y + LINE_HEIGHT - 4 }, [box.lines[0]]), svg(this.doc, 'title', {}, [this.title(box)])]);
      title.addEventListener('click', () => this.collapse(box.key));
      root.appendChild(title);
    }
    for (const box of scene.boxes.filter(b => !b.expanded)) {
      root.appendChild(this.drawBox(box));
    }
    return root;
  }

  private drawBox(box: SceneBox): SVGElement {
    const classes = ['ipu-wb-pbox', `ipu-wb-pbox-${box.kind}`, ...(box.expanded ? ['ipu-wb-pbox-frame'] : [])];
    const group = svg(this.doc, 'g', { class: classes.join(' '), transform: `translate(${box.x - box.w / 2},${box.y})`,
      'data-key': box.key });
    group.appendChild(svg(this.doc, 'title', {}, [this.title(box)]));
    group.appendChild(svg(this.doc, 'rect', { class: 'ipu-wb-box', width: box.w, height: box.h, rx: box.kind === 'group' ? 8 : 3,
      style: box.kind === 'group' ? '' : `fill: ${ipuColour(box.ipu)}` }));
    if (box.expanded) {  // a frame: its title band closes it, the rest lets clicks through to what it holds
      const band = svg(this.doc, 'g', { class: 'ipu-wb-frame-title' }, [
        svg(this.doc, 'rect', { class: 'ipu-wb-frame-band', width: box.w, height: HEADER, rx: 8 })
      ]);
      band.addEventListener('click', event => {
        event.stopPropagation();
        this.collapse(box.key);
      });
      group.appendChild(band);
      return group;
    }
    box.lines.forEach((line, i) => {
      group.appendChild(svg(this.doc, 'text', { class: i === 0 ? 'ipu-wb-label ipu-wb-pbox-title' : 'ipu-wb-label ipu-wb-pbox-line',
        x: PAD_X, y: PAD_Y + LINE_HEIGHT * (i + 1) - 4 }, [line]));
    });
    group.addEventListener('mouseenter', () => this.describe(box));
    group.addEventListener('click', () => this.activate(box));
    return group;
  }

  private title(box: SceneBox): string {
    if (box.expanded) {
      return `${box.lines[0]}\nclick the title to close`;
    }
    if (box.kind === 'group') {
      return `${box.lines.join('\n')}\nclick to expand in place`;
    }
    const op = this.index.ops.get(box.key);
    const name = op ? op.name : box.key;
    return box.kind === 'call' ? `${name}\nclick to open the called graph` : name;
  }

  private describe(box: SceneBox): void {
    const op = this.index.ops.get(box.key);
    if (op !== undefined) {
      const graph = [...this.index.graphs.values()].find(g => g.ops.includes(op));
      this.details.showOp(this.index, graph?.id ?? '', op);
    } else {
      this.details.show(box.lines[0].replace(/^[▸▾] /, ''), [...box.lines.slice(1), box.expanded ? 'click its title to close' : 'click to expand in place']);
    }
  }

  private activate(box: SceneBox): void {
    if (box.kind === 'group') {
      this.expand(box.key);
    } else if (box.kind === 'call' && box.calls?.length) {
      this.showGraph(box.calls[0]);
    }
  }

  private drawLegend(scene: Scene): void {
    clear(this.legend);
    const ipus = [...new Set(scene.boxes.filter(n => n.kind !== 'group').map(n => n.ipu))].sort((a, b) => a - b);
    const swatch = (className: string) => el(this.doc, 'span', `ipu-wb-swatch ${className}`);
    const items: HTMLElement[] = [];
    for (const ipu of ipus) {
      const mark = swatch('ipu-wb-swatch-op');
      mark.style.background = ipuColour(ipu);
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', [mark, `op on IPU ${ipu}: type, attribute, weights ⟨shape⟩`]));
    }
    if (scene.boxes.some(n => n.kind === 'group' && !n.expanded)) {
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', [swatch('ipu-wb-swatch-group'), '▸ group of ops: click to expand in place']));
    }
    if (scene.boxes.some(n => n.expanded)) {
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', [swatch('ipu-wb-swatch-frame'), '▾ expanded group: click its title to close']));
    }
    if (scene.boxes.some(n => n.kind === 'call')) {
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', [swatch('ipu-wb-swatch-call'), 'call: click to open the graph it calls']));
    }
    if (scene.edges.length) {
      items.push(el(this.doc, 'span', 'ipu-wb-legend-item', ['→ tensor (point at it for its name and shape)']));
    }
    this.legend.append(...items);
  }
}
