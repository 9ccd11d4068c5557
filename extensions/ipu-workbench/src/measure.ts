/**
 * How wide the graph view's labels are drawn (11 px code font), so that every box is sized to hold its
 * label: an estimate that is never short for a monospace font, raised to the browser's own measure
 * where it has one.
 */

/** Labels longer than this are cut short with an ellipsis. */
export const MAX_LABEL_CHARS = 40;
/** At least one character's advance in an 11 px monospace font (0.6 em is 6.6 px). */
const CHAR_WIDTH = 7;
/** East Asian wide characters and emoji take about a whole em. */
const WIDE_CHAR_WIDTH = 12;
const WIDE = /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6\u{1F300}-\u{1FAFF}]/u;

/** The width in pixels of `text` drawn as a label (`bold` for the call ops' labels). */
export type TextWidth = (text: string, bold: boolean) => number;

/** The label as drawn: at most MAX_LABEL_CHARS characters. */
export function shorten(label: string): string {
  const chars = [...label];
  return chars.length > MAX_LABEL_CHARS ? `${chars.slice(0, MAX_LABEL_CHARS - 1).join('')}…` : label;
}

/** A width no smaller than any monospace font draws `text` in at 11 px. */
export function estimateWidth(text: string): number {
  let width = 0;
  for (const char of text) {
    width += WIDE.test(char) ? WIDE_CHAR_WIDTH : CHAR_WIDTH;
  }
  return width;
}

/**
 * The larger of the estimate and what a canvas measures in the page's code font, where the page can
 * measure (a browser; not jsdom). Widths are remembered per label.
 */
export function labelWidths(doc: Document): TextWidth {
  const view = doc.defaultView as (Window & { CanvasRenderingContext2D?: unknown }) | null;
  const context = view && typeof view.CanvasRenderingContext2D === 'function' ? doc.createElement('canvas').getContext('2d') : null;
  if (!view || !context) {
    return estimateWidth;
  }
  const family = view.getComputedStyle(doc.documentElement).getPropertyValue('--jp-code-font-family').trim() || 'monospace';
  const known = new Map<string, number>();
  return (text, bold) => {
    const key = `${bold ? 'b' : 'n'}${text}`;
    let width = known.get(key);
    if (width === undefined) {
      context.font = `${bold ? '600 ' : ''}11px ${family}`;
      width = Math.max(estimateWidth(text), Math.ceil(context.measureText(text).width));
      known.set(key, width);
    }
    return width;
  };
}
