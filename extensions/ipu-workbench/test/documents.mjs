// Small "ipu-workbench/ir" documents for the view tests, written by hand like the Python export.

export const EVIL = '<img src=x onerror="__wbXss=1">';
export const EVIL_SCRIPT = '<script>__wbXss=1</script>';

const tensor = (graph, name, kind, producer = null, shape = [4]) => ({
  id: graph === 'main_graph' ? name : `${graph}/${name}`,
  name,
  kind,
  shape,
  meta_shape: [],
  dtype: 'float32',
  ipu: 0,
  tile_set: 'compute',
  nbytes: 4 * shape.reduce((a, b) => a * b, 1),
  producer
});

const op = (graph, name, type, inputs, outputs, extra = {}) => ({
  id: graph === 'main_graph' ? name : `${graph}/${name}`,
  name,
  type,
  ipu: 0,
  tile_set: 'compute',
  inputs,
  outputs,
  attrs: {},
  called_graphs: [],
  modified: [],
  aliases: [],
  after: [],
  ...extra
});

/** main: w (variable, evil name) -> call(body) -> repeat(loop, 3) -> host_store; body and loop are subgraphs. */
export function sampleDocument() {
  const body = {
    id: 'body', name: 'body', label: 'body', is_main: false,
    inputs: ['body/a'], outputs: ['body/out'],
    ops: [
      op('body', 'mul.1', 'mul', ['body/a', 'body/a'], ['body/m']),
      op('body', `${EVIL_SCRIPT}.2`, 'add', ['body/m', 'body/a'], ['body/out'], { attrs: { note: EVIL } })
    ],
    tensors: [tensor('body', 'a', 'input'), tensor('body', 'm', 'intermediate', 'body/mul.1'),
      tensor('body', 'out', 'intermediate', `body/${EVIL_SCRIPT}.2`)]
  };
  const loop = {
    id: EVIL, name: EVIL, label: EVIL, is_main: false,
    inputs: [`${EVIL}/b`], outputs: [`${EVIL}/c`],
    ops: [op(EVIL, 'neg.4', 'neg', [`${EVIL}/b`], [`${EVIL}/c`])],
    tensors: [tensor(EVIL, 'b', 'input'), tensor(EVIL, 'c', 'intermediate', `${EVIL}/neg.4`)]
  };
  const main = {
    id: 'main_graph', name: '', label: 'main', is_main: true, inputs: [], outputs: [],
    ops: [
      op('main_graph', 'call.3', 'call', [EVIL], ['y'], { called_graphs: ['body'], attrs: { graph_inputs: [0] } }),
      op('main_graph', 'repeat.5', 'repeat', ['y'], ['z'], { called_graphs: [EVIL], attrs: { repeat_count: 3 } }),
      op('main_graph', 'host_store.6', 'host_store', ['z'], [], { attrs: { stream: EVIL } })
    ],
    tensors: [tensor('main_graph', EVIL, 'variable'), tensor('main_graph', 'y', 'intermediate', 'call.3'),
      tensor('main_graph', 'z', 'intermediate', 'repeat.5')]
  };
  const steps = [['call.3', 'main_graph', 0], ['body/mul.1', 'body', 1], [`body/${EVIL_SCRIPT}.2`, 'body', 1],
    ['repeat.5', 'main_graph', 0], [`${EVIL}/neg.4`, EVIL, 1], ['host_store.6', 'main_graph', 0]]
    .map(([opId, graph, depth]) => ({ op: opId, graph, depth }));
  return {
    schema: 'ipu-workbench/ir',
    version: 1,
    ir: { id: 7, replication_factor: 1, num_host_transfers: 1 },
    graphs: [main, body, loop],
    call_sites: [
      { graph: 'main_graph', op: 'call.3', callee: 'body', kind: 'call', repeat_count: null, inputs: [], outputs: [] },
      { graph: 'main_graph', op: 'repeat.5', callee: EVIL, kind: 'repeat', repeat_count: 3, inputs: [], outputs: [] }
    ],
    streams: [{ name: EVIL, direction: 'd2h', shape: [4], dtype: 'float32', used_by: ['host_store.6'] }],
    variables: [],
    remote_buffers: [],
    liveness: {
      version: 1,
      error: null,
      steps,
      ipus: [{ ipu: 0, variables: 16, constants: 0, intermediates: [0, 16, 32, 16, 32, 16], code: [100, 100, 100, 100, 100, 100],
        peak_step: 2, peak_bytes: 148 }]
    }
  };
}
