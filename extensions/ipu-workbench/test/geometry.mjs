// The geometry of a drawn graph, read back from its SVG: node boxes, frames, labels and edge routes in
// the coordinates of the whole drawing, and the checks the graph view promises: no two boxes or labels
// overlap, no edge runs through a box that is not one of its ends, everything inside the drawing.
import { estimateWidth } from '../lib/measure.js';

/** Labels are 11 px: from 9 px above their baseline to 3 px below. */
const ASCENT = 9;
const DESCENT = 3;
/** Boxes touching, or an edge ending on a box's side, is not an overlap. */
const SLACK = 0.5;

function translation(element) {
  const match = /translate\(([-\d.e]+),([-\d.e]+)\)/.exec(element.getAttribute('transform') ?? '');
  return match ? { x: Number(match[1]), y: Number(match[2]) } : { x: 0, y: 0 };
}

/** Where `element`'s own coordinates start in the drawing: the translations of it and its ancestors. */
function origin(element, svg) {
  let x = 0;
  let y = 0;
  for (let node = element; node && node !== svg; node = node.parentElement) {
    const t = translation(node);
    x += t.x;
    y += t.y;
  }
  return { x, y };
}

function labelBox(text, svg) {
  const at = origin(text.parentElement, svg);
  const x = at.x + Number(text.getAttribute('x'));
  const y = at.y + Number(text.getAttribute('y'));
  const width = estimateWidth(text.textContent);
  const left = text.getAttribute('text-anchor') === 'middle' ? x - width / 2 : x;
  return { left, top: y - ASCENT, right: left + width, bottom: y + DESCENT, name: text.textContent };
}

/** Boxes, labels and edge polylines of the drawing in `svg`. */
export function readDrawing(svg) {
  const boxes = [];
  for (const rect of svg.querySelectorAll('.ipu-wb-box, .ipu-wb-frame')) {
    const owner = rect.parentElement;
    const at = origin(owner, svg);
    const width = Number(rect.getAttribute('width'));
    const height = Number(rect.getAttribute('height'));
    const name = rect.classList.contains('ipu-wb-frame') ? `frame ${owner.querySelector(':scope > .ipu-wb-frame-label').textContent}`
      : owner.getAttribute('data-key');
    boxes.push({ left: at.x, top: at.y, right: at.x + width, bottom: at.y + height, name, element: owner,
      frame: rect.classList.contains('ipu-wb-frame') });
  }
  const labels = [...svg.querySelectorAll('.ipu-wb-label, .ipu-wb-frame-label')].map(text => labelBox(text, svg));
  const edges = [...svg.querySelectorAll('.ipu-wb-edge')].map(path => {
    const at = origin(path.parentElement, svg);
    const numbers = path.getAttribute('d').match(/-?[\d.]+(e-?\d+)?/g).map(Number);
    const points = [];
    for (let i = 0; i < numbers.length; i += 2) {
      points.push({ x: at.x + numbers[i], y: at.y + numbers[i + 1] });
    }
    return { points, element: path, name: path.querySelector('title').textContent };
  });
  return { width: Number(svg.getAttribute('width')), height: Number(svg.getAttribute('height')), boxes, labels, edges };
}

function overlap(a, b) {
  return a.left < b.right - SLACK && b.left < a.right - SLACK && a.top < b.bottom - SLACK && b.top < a.bottom - SLACK;
}

function contains(box, point) {
  return box.left - SLACK <= point.x && point.x <= box.right + SLACK && box.top - SLACK <= point.y && point.y <= box.bottom + SLACK;
}

/** Whether the segment from `p` to `q` enters the inside of `box` (Liang–Barsky clipping). */
export function crosses(p, q, box) {
  const inner = { left: box.left + SLACK, top: box.top + SLACK, right: box.right - SLACK, bottom: box.bottom - SLACK };
  let t0 = 0;
  let t1 = 1;
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  for (const [step, room] of [[-dx, p.x - inner.left], [dx, inner.right - p.x], [-dy, p.y - inner.top], [dy, inner.bottom - p.y]]) {
    if (step === 0) {
      if (room <= 0) {
        return false;
      }
    } else {
      const t = room / step;
      if (step < 0) {
        t0 = Math.max(t0, t);
      } else {
        t1 = Math.min(t1, t);
      }
    }
  }
  return t0 < t1;
}

/** Everything wrong with the drawing's geometry, as sentences (none for a good drawing). */
export function geometryProblems(drawing) {
  const problems = [];
  const { boxes, labels, edges } = drawing;
  const nested = (a, b) => a.element.contains(b.element) || b.element.contains(a.element);
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      if (!nested(boxes[i], boxes[j]) && overlap(boxes[i], boxes[j])) {
        problems.push(`boxes ${boxes[i].name} and ${boxes[j].name} overlap`);
      }
    }
  }
  for (let i = 0; i < labels.length; i++) {
    for (let j = i + 1; j < labels.length; j++) {
      if (overlap(labels[i], labels[j])) {
        problems.push(`labels ${JSON.stringify(labels[i].name)} and ${JSON.stringify(labels[j].name)} overlap`);
      }
    }
  }
  for (const box of boxes.filter(b => !b.frame)) {
    const label = labelBox(box.element.querySelector(':scope > .ipu-wb-label'), box.element.ownerSVGElement);
    if (label.left < box.left || label.right > box.right || label.top < box.top || label.bottom > box.bottom) {
      problems.push(`the label of ${box.name} sticks out of its box`);
    }
  }
  for (const edge of edges) {
    const first = edge.points[0];
    const last = edge.points[edge.points.length - 1];
    const ends = boxes.filter(box => !box.frame && (contains(box, first) || contains(box, last)));
    if (ends.length < 2) {
      problems.push(`edge ${edge.name} does not run from one box to another`);
    }
    for (const box of boxes) {
      if (ends.includes(box) || box.element.contains(edge.element)) {
        continue;
      }
      for (let i = 1; i < edge.points.length; i++) {
        if (crosses(edge.points[i - 1], edge.points[i], box)) {
          problems.push(`edge ${edge.name} runs through ${box.name}`);
          break;
        }
      }
    }
  }
  const inside = ({ left, top, right, bottom }) => left >= -SLACK && top >= -SLACK && right <= drawing.width + SLACK &&
    bottom <= drawing.height + SLACK;
  for (const item of [...boxes, ...labels]) {
    if (!inside(item)) {
      problems.push(`${item.name} is outside the drawing`);
    }
  }
  for (const edge of edges) {
    if (!edge.points.every(p => inside({ left: p.x, top: p.y, right: p.x, bottom: p.y }))) {
      problems.push(`edge ${edge.name} leaves the drawing`);
    }
  }
  return problems;
}
