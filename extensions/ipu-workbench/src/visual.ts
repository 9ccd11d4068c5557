/**
 * The visual language the plotly views share (workbench/widgets/visual_language.json, compiled in at
 * build time): colours as CSS custom properties on a view's root, byte counts written as the Python side
 * writes them, and ops, call sites and counts named as the plotly views name them.
 */
import { VISUAL } from './generated/visual.js';
import { CallSiteRecord, OpRecord } from './generated/document.js';

/** The custom properties base.css draws with, and their values. */
export const COLOUR_PROPERTIES: Record<string, string> = {
  '--ipu-wb-variable': VISUAL.kinds.colours.variable,
  '--ipu-wb-constant': VISUAL.kinds.colours.constant,
  '--ipu-wb-input': VISUAL.kinds.colours.input,
  '--ipu-wb-intermediate': VISUAL.kinds.colours.intermediate,
  '--ipu-wb-code': VISUAL.kinds.colours.code,
  '--ipu-wb-op-outline': VISUAL.lines.op_outline,
  '--ipu-wb-call-outline': VISUAL.lines.call_outline,
  '--ipu-wb-edge': VISUAL.lines.edge,
  '--ipu-wb-highlight': VISUAL.lines.highlight,
  '--ipu-wb-capacity': VISUAL.lines.capacity,
  '--ipu-wb-text-on-fill': VISUAL.font.color
};

/** Sets the colour properties on `root`, so everything drawn inside it takes them. */
export function applyColours(root: HTMLElement): void {
  for (const [name, value] of Object.entries(COLOUR_PROPERTIES)) {
    root.style.setProperty(name, value);
  }
}

/** The fill of ops on IPU `ipu`. */
export function ipuColour(ipu: number): string {
  const colours = VISUAL.ipus.colours;
  return colours[ipu % colours.length];
}

export type MemoryKind = keyof typeof VISUAL.kinds.labels;

/** The name of a layer of the memory charts: 'variables', 'constants', 'intermediates', 'code'. */
export function kindLabel(kind: MemoryKind): string {
  return VISUAL.kinds.labels[kind];
}

/** `1536` as '1.5 KiB': binary units to three significant figures, whole bytes below 1 KiB. */
export function formatBytes(nbytes: number): string {
  const { units, step, significant_figures: digits } = VISUAL.bytes;
  let value = nbytes;
  for (let i = 0; i < units.length; i++) {
    if (Math.abs(value) < step || i === units.length - 1) {
      return i === 0 ? `${Math.trunc(value)} ${units[0]}` : `${generalFormat(value, digits)} ${units[i]}`;
    }
    value /= step;
  }
  throw new Error('unreachable');
}

/**
 * `value` to `digits` significant figures as Python's `format(value, '.{digits}g')` writes it: ties
 * rounded to even, trailing zeros dropped, an exponent when the number would need more digits.
 */
export function generalFormat(value: number, digits: number): string {
  if (value === 0 || !Number.isFinite(value)) {
    return String(value);
  }
  let exponent = Math.floor(Math.log10(Math.abs(value)));
  let mantissa = scaledToDigits(value, digits, exponent);
  if (Math.abs(mantissa) >= 10 ** digits) {
    exponent += 1;
    mantissa = scaledToDigits(value, digits, exponent);
  } else if (Math.abs(mantissa) < 10 ** (digits - 1)) {
    exponent -= 1;
    mantissa = scaledToDigits(value, digits, exponent);
  }
  const sign = mantissa < 0 ? '-' : '';
  const figures = String(Math.abs(mantissa));
  if (exponent < -4 || exponent >= digits) {
    const written = trimZeros(`${figures[0]}.${figures.slice(1)}`);
    return `${sign}${written}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  const decimals = digits - 1 - exponent;
  const fixed = decimals === 0 ? figures : decimals >= digits ? `0.${'0'.repeat(decimals - digits)}${figures}` :
    `${figures.slice(0, digits - decimals)}.${figures.slice(digits - decimals)}`;
  return sign + trimZeros(fixed);
}

/** `value / 10**(exponent - digits + 1)` rounded half to even: the significant figures as an integer. */
function scaledToDigits(value: number, digits: number, exponent: number): number {
  const shift = digits - 1 - exponent;
  const scaled = shift >= 0 ? value * 10 ** shift : value / 10 ** -shift;
  const floor = Math.floor(scaled);
  const rest = scaled - floor;
  return rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
}

function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

/** Byte values from 0 to `top` for axis ticks: at most `most`, a power of two apart (as the plotly views tick). */
export function binaryTicks(top: number, most = 6): number[] {
  const step = 2 ** Math.max(0, Math.ceil(Math.log2(Math.max(top, 1) / most)));
  const ticks: number[] = [];
  for (let value = 0; value <= top; value += step) {
    ticks.push(value);
  }
  return ticks;
}

/** '1 graph', '2 graphs'. */
export function countOf(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * An op's label in the graph view: its type, or for an op that calls graphs (as the plotly graph view
 * writes it) 'call body', 'repeat ×3 body' or 'conditional then | else', with the fold marker.
 */
export function opLabel(op: OpRecord, sites: CallSiteRecord[], calleeLabel: (graph: string) => string,
  expanded: boolean): string {
  if (sites.length === 0) {
    return op.type;
  }
  const marker = expanded ? '▾' : '▸';
  if (op.type === 'repeat') {
    return `${marker} repeat ×${String(op.attrs.repeat_count ?? sites[0].repeat_count)} ${calleeLabel(sites[0].callee)}`;
  }
  return `${marker} ${op.type} ${sites.map(site => calleeLabel(site.callee)).join(' | ')}`;
}

/** The title of an expanded call's frame: 'call: body', 'repeat ×3: body', 'then: body'. */
export function frameLabel(site: CallSiteRecord, calleeLabel: string): string {
  if (site.kind === 'repeat') {
    return `repeat ×${site.repeat_count}: ${calleeLabel}`;
  }
  if (site.kind.startsWith('conditional')) {
    return `${site.kind.split('-')[1]}: ${calleeLabel}`;
  }
  return `call: ${calleeLabel}`;
}

/** A call site in the call tree: 'call', 'repeat ×N', 'branch (then)' or 'branch (else)'. */
export function siteLabel(site: CallSiteRecord): string {
  if (site.kind === 'repeat') {
    return `repeat ×${site.repeat_count}`;
  }
  if (site.kind.startsWith('conditional')) {
    return `branch (${site.kind.split('-')[1]})`;
  }
  return 'call';
}
