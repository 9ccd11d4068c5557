/**
 * The liveness chart: live tile memory of one IPU at each step of the flattened schedule, stacked
 * bottom up as variables, constants, intermediates and code (as the plotly memory chart stacks them),
 * with the peak marked. It is laid out for the width of its panel (measured, and again on each resize), so
 * that its text keeps its size in a narrow output and its steps spread over a wide one.
 */
import { Details } from './details.js';
import { Column, columns } from './columns.js';
import { clear, el, svg } from './dom.js';
import { IpuLiveness, IrIndex, LivenessSection, ViewOptions } from './model.js';
import { maxOf } from './numbers.js';
import { binaryTicks, formatBytes, kindLabel, MemoryKind } from './visual.js';

/** The chart's width until its panel's is known (off the page, or in a hidden tab). */
const WIDTH = 720;
/** The narrowest chart laid out: a narrower panel shows it smaller. */
const NARROWEST = 320;
const HEIGHT = 240;
const LEFT = 72;
const RIGHT = 8;
const BOTTOM = 24;
const TOP = 12;
/** Pixels the panel's width must change by before the chart is laid out again. */
const REFIT_STEP = 8;

interface Series {
  name: string;
  className: string;
  value: (ipu: IpuLiveness, step: number) => number;
}

const series = (kind: MemoryKind, value: Series['value']): Series =>
  ({ name: kindLabel(kind), className: `ipu-wb-series-${kind}`, value });

const SERIES: Series[] = [
  series('variable', ipu => ipu.variables),
  series('constant', ipu => ipu.constants),
  series('intermediate', (ipu, step) => ipu.intermediates[step]),
  series('code', (ipu, step) => ipu.code[step])
];

export function renderLiveness(doc: Document, index: IrIndex, details: Details, options: ViewOptions): HTMLElement {
  const liveness = index.doc.liveness;
  if (!liveness || liveness.error || liveness.steps.length === 0) {
    const reason = !liveness ? (options.livenessLeftOut ? `No memory chart in this display (${options.livenessLeftOut}).`
      : 'This document has no liveness section.') :
      liveness.error ? `No liveness: ${liveness.error}` : 'The program has no steps.';
    return el(doc, 'div', 'ipu-wb-liveness ipu-wb-empty', [reason]);
  }
  const chart = el(doc, 'div', 'ipu-wb-chart');
  const summary = el(doc, 'div', 'ipu-wb-liveness-summary');
  const shown = new Set(SERIES.map(s => s.name));
  const codeName = kindLabel('code');
  const dwarfed = liveness.ipus.some(codeDwarfsTensors);
  if (dwarfed) {
    shown.delete(codeName);
  }
  let current = liveness.ipus[0];
  let width = 0;  // the panel's width the chart was laid out for (0: not measured)
  const draw = (ipu: IpuLiveness) => {
    current = ipu;
    width = chart.clientWidth;
    clear(chart);
    chart.appendChild(drawChart(doc, index, liveness, ipu, SERIES.filter(s => shown.has(s.name)), details,
      width > 0 ? Math.max(width, NARROWEST) : WIDTH));
    const capacity = options.device?.tile_bytes_per_ipu;
    const peak = ipu.peak_step === null ? 'no steps' : `peak ${formatBytes(ipu.peak_bytes)} at step ${ipu.peak_step}`;
    summary.textContent = `IPU ${ipu.ipu}: ${peak}` +
      (capacity ? ` of ${formatBytes(capacity)} (${((100 * ipu.peak_bytes) / capacity).toFixed(2)}%) on ${options.device!.kind}` : '');
  };
  const parts: (HTMLElement | string)[] = [];
  if (liveness.ipus.length > 1) {
    const select = el(doc, 'select', 'ipu-wb-ipu-select');
    liveness.ipus.forEach((ipu, i) => {
      const option = el(doc, 'option', '', [`IPU ${ipu.ipu}`]);
      option.value = String(i);
      select.appendChild(option);
    });
    select.addEventListener('change', () => draw(liveness.ipus[Number(select.value)]));
    parts.push(el(doc, 'label', '', ['ipu ', select]));
  }
  draw(liveness.ipus[0]);
  const legend = el(doc, 'div', 'ipu-wb-legend', SERIES.map(s => {
    const box = el(doc, 'input', 'ipu-wb-series-toggle');
    box.type = 'checkbox';
    box.checked = shown.has(s.name);
    box.value = s.name;
    box.addEventListener('change', () => {
      if (!shown.delete(s.name)) {
        shown.add(s.name);
      }
      draw(current);
    });
    return el(doc, 'label', 'ipu-wb-legend-item', [box, el(doc, 'span', `ipu-wb-swatch ${s.className}`), s.name]);
  }));
  const note = dwarfed ? [el(doc, 'div', 'ipu-wb-liveness-note',
    [`${codeName} left out: it would dwarf the tensors (tick it below to stack it)`])] : [];
  const Observer = doc.defaultView?.ResizeObserver;
  if (Observer !== undefined) {
    new Observer(() => {
      if (chart.clientWidth > 0 && Math.abs(chart.clientWidth - width) > REFIT_STEP) {
        draw(current);
      }
    }).observe(chart);
  }
  return el(doc, 'div', 'ipu-wb-liveness', [...parts, summary, ...note, chart, legend]);
}

/** Whether code, at its largest, is more than twice the tensors at their largest: stacked with them it
 * would squash them into a thin line (the notebook's memory chart leaves it out likewise). */
export function codeDwarfsTensors(ipu: IpuLiveness): boolean {
  const code = maxOf(ipu.code, value => value, 0);
  const tensors = ipu.variables + ipu.constants + maxOf(ipu.intermediates, value => value, 0);
  return code > 2 * tensors;
}

/**
 * The stacked areas of `series` (the ones ticked in the legend), one column per step or, for long
 * schedules, per run of steps drawn as its largest; hover details list all four series.
 */
function drawChart(doc: Document, index: IrIndex, liveness: LivenessSection, ipu: IpuLiveness, series: Series[],
  details: Details, width: number): SVGElement {
  const steps = liveness.steps.length;
  const shownTotal = (step: number) => {
    let sum = 0;
    for (const s of series) {
      sum += s.value(ipu, step);
    }
    return sum;
  };
  const drawn = columns(steps, shownTotal, width - LEFT - RIGHT);  // at most one column per pixel
  const top = Math.max(1, maxOf(drawn, column => shownTotal(column.step), 0));
  const x = (step: number) => LEFT + ((width - LEFT - RIGHT) * step) / steps;
  const y = (bytes: number) => HEIGHT - BOTTOM - ((HEIGHT - BOTTOM - TOP) * bytes) / top;
  const root = svg(doc, 'svg', { class: 'ipu-wb-chart-svg', width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}` });
  const below = new Float64Array(drawn.length);
  for (const area of series) {
    const upper = drawn.map((column, c) => below[c] + area.value(ipu, column.step));
    const points: string[] = [];
    drawn.forEach((column, c) => points.push(`${x(column.first)},${y(upper[c])}`, `${x(column.last + 1)},${y(upper[c])}`));
    for (let c = drawn.length - 1; c >= 0; c--) {
      points.push(`${x(drawn[c].last + 1)},${y(below[c])}`, `${x(drawn[c].first)},${y(below[c])}`);
    }
    root.appendChild(svg(doc, 'polygon', { class: `ipu-wb-area ${area.className}`, points: points.join(' ') },
      [svg(doc, 'title', {}, [area.name])]));
    upper.forEach((v, c) => (below[c] = v));
  }
  for (const bytes of binaryTicks(top)) {
    root.appendChild(svg(doc, 'line', { class: 'ipu-wb-axis', x1: LEFT, x2: width - RIGHT, y1: y(bytes), y2: y(bytes) }));
    root.appendChild(svg(doc, 'text', { class: 'ipu-wb-axis-label', x: LEFT - 6, y: y(bytes) + 4, 'text-anchor': 'end' }, [formatBytes(bytes)]));
  }
  root.appendChild(svg(doc, 'text', { class: 'ipu-wb-axis-label', x: LEFT, y: HEIGHT - 6 }, ['step 0']));
  root.appendChild(svg(doc, 'text', { class: 'ipu-wb-axis-label', x: width - RIGHT, y: HEIGHT - 6, 'text-anchor': 'end' }, [`step ${steps - 1}`]));
  if (ipu.peak_step !== null) {
    const px = (x(ipu.peak_step) + x(ipu.peak_step + 1)) / 2;
    root.appendChild(svg(doc, 'line', { class: 'ipu-wb-peak', x1: px, x2: px, y1: TOP, y2: HEIGHT - BOTTOM },
      [svg(doc, 'title', {}, [`peak: ${formatBytes(ipu.peak_bytes)} at step ${ipu.peak_step}`])]));
  }
  for (const column of drawn) {
    const hover = svg(doc, 'rect', { class: 'ipu-wb-step', x: x(column.first), y: TOP,
      width: Math.max(1, x(column.last + 1) - x(column.first)), height: HEIGHT - BOTTOM - TOP });
    hover.addEventListener('mouseenter', () => showStep(index, liveness, ipu, column, details));
    root.appendChild(hover);
  }
  return root;
}

function showStep(index: IrIndex, liveness: LivenessSection, ipu: IpuLiveness, column: Column, details: Details): void {
  const i = column.step;
  const step = liveness.steps[i];
  const op = index.ops.get(step.op);
  const span = column.first === column.last ? [] :
    [`steps ${column.first} to ${column.last}, drawn as their largest, step ${i}`];
  details.show(`step ${i}: ${op ? `${op.type} ${op.name}` : step.op}`, [
    ...span,
    `graph ${index.graphs.get(step.graph)?.label ?? step.graph}, call depth ${step.depth}`,
    `total ${formatBytes(SERIES.reduce((sum, s) => sum + s.value(ipu, i), 0))}`,
    ...SERIES.map(s => `${s.name} ${formatBytes(s.value(ipu, i))}`)
  ]);
}
