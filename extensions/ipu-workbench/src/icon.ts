/**
 * The file icon of `.ir.json` files: a small dataflow graph, two ops feeding a third. `jp-icon3` lets
 * the JupyterLab theme recolour it, as its own file icons are.
 */
export const IR_FILE_ICON = {
  name: 'ipu-workbench:ir-file',
  svgstr: [
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">',
    '<g class="jp-icon3" fill="#616161" stroke="#616161">',
    '<rect x="2" y="2.5" width="8" height="6" rx="1.5" stroke="none"/>',
    '<rect x="14" y="2.5" width="8" height="6" rx="1.5" stroke="none"/>',
    '<rect x="8" y="15.5" width="8" height="6" rx="1.5" stroke="none"/>',
    '<path d="M6 8.5 L12 15.5 M18 8.5 L12 15.5" fill="none" stroke-width="2"/>',
    '</g></svg>'
  ].join('')
};
