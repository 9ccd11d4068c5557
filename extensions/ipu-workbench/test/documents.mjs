// The documents of the view tests. sample.ir.json is a small "ipu-workbench/ir" document written like the
// Python export: main: w (a variable named with markup) -> call(body) -> repeat(loop, 3) -> host_store,
// where body and loop are subgraphs and loop's name is markup too. malformed.json lists edits that each
// break it in one way, with the message the viewer must show; the Python tests read both files too.
// one_graph.ir.json is the export of a program of one graph.
import { readFileSync } from 'node:fs';

export const EVIL = '<img src=x onerror="__wbXss=1">';
export const EVIL_SCRIPT = '<script>__wbXss=1</script>';

const read = name => readFileSync(new URL(name, import.meta.url), 'utf8');
const SAMPLE = read('sample.ir.json');

/** A fresh copy of the sample document. */
export function sampleDocument() {
  return JSON.parse(SAMPLE);
}

/** A program of one graph calling no other (main: sin, add and relu of a variable, on IPU 1), as exported. */
export function oneGraphDocument() {
  return JSON.parse(read('one_graph.ir.json'));
}

/** The malformed cases: { name, expect, and one of text | set: {path, value} | delete: path }. */
export const MALFORMED = JSON.parse(read('malformed.json'));

/** The case's document (or JSON text): the sample with the case's edit made. */
export function malformedDocument(item) {
  if ('text' in item) {
    return item.text;
  }
  const path = item.set ? item.set.path : item.delete;
  if (path.length === 0) {
    return item.set.value;
  }
  const document = sampleDocument();
  const parent = path.slice(0, -1).reduce((node, key) => node[key], document);
  const last = path[path.length - 1];
  if (item.set) {
    parent[last] = item.set.value;
  } else {
    delete parent[last];
  }
  return document;
}
